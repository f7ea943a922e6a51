/**
 * Phoenix overlay, one package to install: everything `@phoenix-overlay/transport` exports (the
 * libp2p service `phoenix`, the node helper `createPhoenixLibp2p`, `PhoenixTransportError`, the
 * limits, and the types of their options and events), plus the error classes of the layers
 * below that a caller may meet. This is the public API the versioning policy in CHANGELOG.md
 * covers; the scoped packages export more, for tests and tools, with no such promise.
 */
export * from '@phoenix-overlay/transport'
export { PhoenixError, type CoreLimits, type CoreTiming, type PhoenixErrorCode, type RouteView, type RoutingMode } from '@phoenix-overlay/core'
export { WireError, type WireErrorCode } from '@phoenix-overlay/wire'
