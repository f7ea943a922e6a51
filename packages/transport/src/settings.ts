import { PhoenixError, resolveSettings } from '@phoenix-overlay/core'
import { WIRE_LIMITS } from '@phoenix-overlay/wire'
import { PhoenixTransportError, shown } from './errors.ts'
import type { PhoenixInit } from './api.ts'
import { TIMER_MS_MAX, TRANSPORT_LIMITS, TRANSPORT_TIMING } from './constants.ts'
import { checkLivenessTiming } from './liveness.ts'
import { SSH_TUNNEL_LIMITS, SSH_TUNNEL_TIMING } from './ssh-tunnel.ts'

/**
 * Limits where 0 means something (`flowWindowBytes`: credit off; `duplicateWindowMax`: no
 * repeat is recognised). Any other limit at 0 would refuse every message, or every send.
 */
const LIMITS_ZERO_ALLOWED: ReadonlySet<string> = new Set(['flowWindowBytes', 'duplicateWindowMax'])

/** Timings where 0 means something (`routeWaitMs`: fail at once without a route; `dialDeferMs`: both ends dial; the leave's two bounds: close at once). */
const TIMING_ZERO_ALLOWED: ReadonlySet<string> = new Set(['routeWaitMs', 'dialDeferMs', 'leaveLingerMaxMs', 'leaveFlushMaxMs'])

/** SSH tunnels: no restart after a failure; an unleased tunnel closed at once. */
const SSH_ZERO_ALLOWED: ReadonlySet<string> = new Set(['restartAttemptsMax', 'idleLingerMs'])

/**
 * Refuses transport limits and timing that are not integers in range, a protocol id
 * multistream-select cannot carry, and core limits and timing the core would refuse, naming the
 * option: `PhoenixInit.limits`, `.timing` and `.protocol` were taken as given, and a wrong one
 * failed later and elsewhere (a negative `flowWindowBytes` as an internal invariant, a string
 * `receiveBufferMax` compared as text); `core.limits` failed only at start, as the core's
 * INVALID_CONFIG naming `limits.X`.
 */
export function checkInitSettings(init: PhoenixInit): void {
  const limits = { ...TRANSPORT_LIMITS, ...init.limits }
  const timing = { ...TRANSPORT_TIMING, ...init.timing }
  const { protocol, core } = init
  checkIntegers('limits', limits, LIMITS_ZERO_ALLOWED)
  checkIntegers('timing', timing, TIMING_ZERO_ALLOWED)
  checkLivenessTiming(timing)
  if (init.ssh !== undefined) {
    checkIntegers('ssh.limits', { ...SSH_TUNNEL_LIMITS, ...init.ssh.limits }, SSH_ZERO_ALLOWED)
    checkIntegers('ssh.timing', { ...SSH_TUNNEL_TIMING, ...init.ssh.timing }, SSH_ZERO_ALLOWED)
  }
  // The core's own checks, now rather than when the node starts, naming the option as the user wrote it.
  try {
    resolveSettings({ id: 'check', ...(core?.limits ? { limits: core.limits } : {}), ...(core?.timing ? { timing: core.timing } : {}) })
  } catch (error) {
    if (!(error instanceof PhoenixError)) throw error
    const field = /^(limits|timing)\.\w+/.exec(error.message)?.[0]
    throw new PhoenixTransportError('INVALID_INPUT', field === undefined ? `core: ${error.message}` : `core.${error.message}`, { field: field === undefined ? 'core' : `core.${field}` })
  }
  // Our sends carry it as their hop limit, and every node drops a neighbour whose frame claims more than the wire's bound.
  const hopLimit = core?.limits?.hopLimit
  if (hopLimit !== undefined && hopLimit > WIRE_LIMITS.hopLimitMax) {
    throw new PhoenixTransportError('INVALID_INPUT', `core.limits.hopLimit must be at most ${WIRE_LIMITS.hopLimitMax} (the wire's hop limit field; a node drops a neighbour that sends more), got ${shown(hopLimit)}`, { field: 'core.limits.hopLimit' })
  }
  // multistream-select frames a protocol id as one line: it starts with '/' (as every libp2p protocol does) and has no space or control character.
  if (protocol !== undefined && (typeof protocol !== 'string' || !/^\/[^\s\p{Cc}]*$/u.test(protocol))) {
    throw new PhoenixTransportError('INVALID_INPUT', `protocol must be a libp2p protocol id, a string starting with "/" without spaces (like "/phoenix/overlay/2.0.0"), got ${JSON.stringify(protocol)}`, { field: 'protocol' })
  }
}

function checkIntegers(group: string, values: Readonly<Record<string, unknown>>, zeroAllowed: ReadonlySet<string>): void {
  for (const [key, value] of Object.entries(values)) {
    const min = zeroAllowed.has(key) ? 0 : 1
    // A timing in ms becomes a timer: past the ceiling a 2^31 ms route wait ended after 1 ms.
    const ms = group.endsWith('timing') && key.endsWith('Ms')
    const max = ms ? TIMER_MS_MAX : Number.MAX_SAFE_INTEGER
    if (typeof value === 'number' && Number.isSafeInteger(value) && value >= min && value <= max) continue
    const what = min === 0 ? 'a non-negative integer' : 'a positive integer'
    throw new PhoenixTransportError('INVALID_INPUT', `${group}.${key} must be ${what}${ms ? ' of ms below 2^31 (the timers\' ceiling)' : ''}, got ${shown(value)}`, { field: `${group}.${key}` })
  }
}
