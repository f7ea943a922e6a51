/**
 * Phoenix overlay, one package to install: the libp2p service and the node helper
 * (`@phoenix-overlay/transport`), the error classes a caller catches, and the types of their
 * options and events. This list is the public API the versioning policy (CHANGELOG.md) covers;
 * the scoped packages export more, for tests and tools, with no such promise.
 */
export {
  PHOENIX_PROTOCOL,
  PhoenixNode,
  PhoenixTransportError,
  TRANSPORT_LIMITS,
  TRANSPORT_TIMING,
  createPhoenixLibp2p,
  phoenix,
  subnetFirewall,
  type OverlayNodeOptions,
  type PeerDropped,
  type PhoenixComponents,
  type PhoenixInit,
  type ReceivedMessage,
  type SendOptions,
  type TransportErrorCode,
  type TransportLimits,
  type TransportTiming,
} from '@phoenix-overlay/transport'
export { PhoenixError, type CoreLimits, type CoreTiming, type PhoenixErrorCode, type RouteView, type RoutingMode } from '@phoenix-overlay/core'
export { WireError, type WireErrorCode } from '@phoenix-overlay/wire'
