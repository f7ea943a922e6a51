export { FLOW_CREDIT_BYTES, WIRE_LIMITS, type WireLimits } from './constants.ts'
export {
  WireError,
  decodeDataHeader,
  decodeFrame,
  encodeDataFramePieces,
  encodeFrame,
  type AckFrame,
  type CreditFrame,
  type FlowCredit,
  type DataFrame,
  type DataHeader,
  type DecodedDataHeader,
  type Frame,
  type ProbeFrame,
  type UndeliverableFrame,
  type UndeliverableReason,
  type WireErrorCode,
} from './codec.ts'
export { encodeUpdateFrames, encodedUpdateSize, splitUpdate } from './size.ts'
export { isDataFrameBytes, rewriteDataHopLimit, rewriteHopLimitAt } from './hop-limit.ts'
