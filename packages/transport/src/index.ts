export { PhoenixNode, phoenix, type PhoenixComponents, type PhoenixInit, type ReceivedMessage, type SendOptions } from './phoenix.ts'
export { PHOENIX_PROTOCOL, TRANSPORT_LIMITS, TRANSPORT_TIMING, type TransportLimits, type TransportTiming } from './constants.ts'
export { PhoenixTransportError, type TransportErrorCode } from './errors.ts'
export { createPhoenixLibp2p, subnetFirewall, type OverlayNodeOptions } from './node.ts'
