export { FLOW_CREDIT_BYTES, INITIAL_HOP_LIMIT_DEFAULT, WIRE_LIMITS, type WireLimits } from './constants.ts'
export {
  WireError,
  decodeDataHeader,
  decodeFrame,
  encodeDataFramePieces,
  encodeFrame,
  hopsTravelled,
  relayedInitialHopLimit,
  sourceHopLimit,
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
