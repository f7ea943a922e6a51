export { PhoenixCore, resolveSettings, type CoreConfig, type CoreStats } from './core.ts'
export { CORE_CONSTANTS, DEFAULT_LIMITS, DEFAULT_TIMING, type CoreLimits, type CoreTiming } from './constants.ts'
export type { NameConflict } from './names.ts'
export { PhoenixError, invariant, type PhoenixErrorCode } from './errors.ts'
export { NodeSet, forEachBit } from './nodeset.ts'
export { HolderSets } from './holders.ts'
export { NodeIndex } from './nodeindex.ts'
export { SharedNumbering } from './shared-numbering.ts'
export { connectablePairs, subnetFirewallAllows, type SubnetPlacement } from './subnets.ts'
export { isFresher, UNREACHABLE_HOPS } from './route.ts'
export { bytesEqual, recordPayload, type RecordAuthority } from './records.ts'
export { SEQ_MODULUS, isUnreachableSeq, isValidSeq, nextOwnSeq, seqAdd, seqNewer } from './seq.ts'
export { adjacencyOf, bfsDistances, checkLoopFree, checkRoutesAgainstBfs, type RouteCheckFailure, type RouteLookup, type ValidRoute } from './verify.ts'
export type {
  Effect,
  ForwardDecision,
  NodeId,
  PhysicalAddress,
  RouteAdvert,
  RouteView,
  RoutingMode,
  StepKind,
  StepResult,
  UpdateMessage,
} from './types.ts'
export { REFUSED_CHARACTERS_RULE, hasRefusedCharacters, nameProblem, quoteEscaped } from './police.ts'
export { unknownKeyProblem } from './option-keys.ts'
