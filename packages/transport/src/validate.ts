import { peerIdFromString } from '@libp2p/peer-id'
import { multiaddr } from '@multiformats/multiaddr'
import { DEFAULT_LIMITS, DEFAULT_TIMING, PhoenixError, nameProblem, unknownKeyProblem } from '@phoenix-overlay/core'
import type { PhoenixInit, SendOptions } from './api.ts'
import type { SshInit } from './dial-path.ts'
import { TIMER_MS_MAX, TRANSPORT_LIMITS, TRANSPORT_TIMING } from './constants.ts'
import { PhoenixTransportError, invalidInput, shown } from './errors.ts'
import { refuseReservedName } from './topology.ts'

/**
 * A logical name as every node accepts it: a non-empty string of at most the core's
 * nameLengthMax characters (UTF-16 units; the wire allows 3 UTF-8 bytes for each), with no
 * control or format character and no unpaired surrogate (police.ts in the core says why).
 */
export function checkName(field: string, name: unknown): asserts name is string {
  const problem = typeof name === 'string' ? nameProblem(name) : 'must be a non-empty string'
  if (problem !== undefined) throw invalidInput(field, problem)
}

/**
 * The name a send is for: a name every node accepts (checkName), and none of the overlay's own
 * (a site's): a send there reached an application that never claimed it, and one to a name
 * nobody holds waited routeWaitMs for nothing. The last name that passed is remembered (a string
 * does not change): a sender sends to the same name message after message, and the character
 * check (a Unicode-class regular expression) was a few of the µs a cold send spends before its
 * frame leaves (issue 19; packages/transport/bench/ends-path.ts).
 */
export function checkSendName(name: unknown): asserts name is string {
  if (name === lastSendName) return
  checkName('name', name)
  refuseReservedName('name', name)
  lastSendName = name
}
let lastSendName: string | undefined

function checkWaitMs(field: string, value: number | undefined, min = 0): void {
  if (value === undefined) return
  // setTimeout's ceiling: a longer wait would fire at once.
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > TIMER_MS_MAX) throw invalidInput(field, `must be a number of milliseconds in ${min === 0 ? '[0' : `(0`}, 2^31), got ${shown(value)}`)
}

const SEND_OPTION_KEYS = Object.keys({ ack: 1, routeWaitMs: 1, ackTimeoutMs: 1, messageId: 1, transfer: 1 } satisfies Record<keyof SendOptions, 1>)

/** A call's options: an object with no key the call does not take (a misspelt `ackTimeout` or `timeout` ran with the default). */
export function checkCallOptions(options: unknown, known: readonly string[]): void {
  if (typeof options !== 'object' || options === null) throw invalidInput('options', 'must be an object')
  const problem = unknownKeyProblem(options, known, 'options')
  if (problem !== undefined) throw new PhoenixTransportError('INVALID_INPUT', problem, { field: problem.slice(0, problem.indexOf(' ')) })
}

export function checkSendOptions(options: SendOptions): void {
  checkCallOptions(options, SEND_OPTION_KEYS)
  checkWaitMs('options.routeWaitMs', options.routeWaitMs)
  // 0 rejected every send with ACK_TIMEOUT at once, though it was delivered (a user's audit), as timing.ackTimeoutMs and the CLI refuse it.
  checkWaitMs('options.ackTimeoutMs', options.ackTimeoutMs, Number.MIN_VALUE)
  if (options.ack !== undefined && typeof options.ack !== 'boolean') throw invalidInput('options.ack', 'must be a boolean')
  // Without ack nothing waits for an acknowledgement: the wait was accepted and ignored (the CLI and the control endpoint refuse it).
  if (options.ackTimeoutMs !== undefined && options.ack !== true) throw invalidInput('options.ackTimeoutMs', 'is the wait for an acknowledgement: it needs ack: true')
  if (options.transfer !== undefined && typeof options.transfer !== 'boolean') throw invalidInput('options.transfer', 'must be a boolean')
}

/**
 * The shape of createPhoenixLibp2p's options, checked before anything is built: a wrong type met
 * deep inside libp2p or the core failed with a message naming neither the option nor the value
 * (`names: 'x'` gave "toJSON not set"; a string for `hubs` was read character by character).
 */
export function checkNodeOptionShapes(options: unknown): void {
  if (typeof options !== 'object' || options === null) throw invalidInput('options', 'must be an object')
  const o = options as Record<string, unknown>
  for (const key of ['listen', 'hubs', 'names', 'allowedPeers', 'sitePrefixes']) {
    const value = o[key]
    if (value === undefined) continue
    if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) throw invalidInput(key, `must be an array of strings, got ${shown(value)}`)
  }
  for (const key of ['limits', 'timing', 'core', 'strangers', 'ssh']) {
    const value = o[key]
    if (value !== undefined && (typeof value !== 'object' || value === null || Array.isArray(value))) throw invalidInput(key, `must be an object, got ${shown(value)}`)
  }
  for (const key of ['discovery', 'signRecords']) {
    if (o[key] !== undefined && typeof o[key] !== 'boolean') throw invalidInput(key, `must be a boolean, got ${shown(o[key])}`)
  }
  if (o.site !== undefined && typeof o.site !== 'string') throw invalidInput('site', `must be a string, got ${shown(o.site)}`)
  // Refused by the core too, but only when the node starts, and as the field "options".
  if (o.mode !== undefined && o.mode !== 'optimized' && o.mode !== 'naive') throw invalidInput('mode', `must be 'optimized' or 'naive', got ${shown(o.mode)}`)
  // A string (the key file read as text) failed in the protector as Node's ERR_INVALID_ARG_TYPE.
  if (o.privateNetworkKey !== undefined && !(o.privateNetworkKey instanceof Uint8Array)) throw invalidInput('privateNetworkKey', `must be a Uint8Array, the swarm key file's bytes (readFileSync(path) without an encoding), got ${typeof o.privateNetworkKey}`)
}


/** Runs a core call, turning the core's refusal (PhoenixError) into INVALID_INPUT naming `field`: no core error reaches the API. */
export function coreErrorToTransport<T>(field: string, run: () => T): T {
  try {
    return run()
  } catch (error) {
    if (error instanceof PhoenixError) {
      // The core often names the field itself ("name: 65 names, at most 64"): not "name: name: …";
      // of its config, as the option it came from ("config.names: …" is the option `names`).
      const own = /^config\.(\w+):/.exec(error.message)?.[1]
      if (own !== undefined) throw new PhoenixTransportError('INVALID_INPUT', error.message.slice('config.'.length), { field: own })
      const message = error.message.startsWith(`${field}:`) || error.message.startsWith(`${field} `) ? error.message : `${field}: ${error.message}`
      throw new PhoenixTransportError(error.code === 'INVALID_STATE' ? 'NOT_STARTED' : 'INVALID_INPUT', message, { field })
    }
    throw error
  }
}

/** Every key of `PhoenixInit` (the type checks the list is whole). */
export const PHOENIX_INIT_KEYS = Object.keys({ hubs: 1, names: 1, site: 1, mode: 1, discovery: 1, signRecords: 1, protocol: 1, ssh: 1, sitePrefixes: 1, limits: 1, timing: 1, core: 1 } satisfies Record<keyof PhoenixInit, 1>)

const SSH_INIT_KEYS = Object.keys({ identityFile: 1, knownHostsFile: 1, strictHostKeys: 1, configFile: 1, advertise: 1, sshPath: 1, limits: 1, timing: 1, optionNames: 1 } satisfies Record<keyof SshInit, 1>)

/**
 * Refuses a key `init` (or `limits`, `timing`, `core` in it) does not take, naming it and the
 * nearest it may have meant (option-keys.ts in the core says why). `known`: the keys of the
 * options object itself (`createPhoenixLibp2p` takes more than the service).
 */
export function checkInitKeys(init: PhoenixInit, known: readonly string[] = PHOENIX_INIT_KEYS): void {
  const problem =
    unknownKeyProblem(init, known, 'options') ??
    unknownKeyProblem(init.limits, Object.keys(TRANSPORT_LIMITS), 'limits') ??
    unknownKeyProblem(init.timing, Object.keys(TRANSPORT_TIMING), 'timing') ??
    unknownKeyProblem(init.ssh, SSH_INIT_KEYS, 'ssh') ??
    unknownKeyProblem(init.core, ['limits', 'timing'], 'core') ??
    unknownKeyProblem(init.core?.limits, Object.keys(DEFAULT_LIMITS), 'core.limits') ??
    unknownKeyProblem(init.core?.timing, Object.keys(DEFAULT_TIMING), 'core.timing')
  if (problem !== undefined) throw new PhoenixTransportError('INVALID_INPUT', problem, { field: problem.slice(0, problem.indexOf(' ')) })
}

/** A hub's address (`field`: the option or argument it came from) is a multiaddr, and its `/p2p/` part, if any, a peer id. */
export function checkHubMultiaddr(address: string, field: string): void {
  let components: { name: string; value?: string }[]
  try {
    components = multiaddr(address).getComponents()
  } catch (error) {
    throw invalidInput(field, `${JSON.stringify(address)} is not a multiaddr: ${(error as Error).message}`)
  }
  // The multiaddr parser takes any text as a /p2p/ value; the dial then failed every time, in the log only.
  for (const { name, value } of components) {
    if (name !== 'p2p' || value === undefined) continue
    try {
      peerIdFromString(value)
    } catch {
      // As allowedPeers says it: the parser's own words ("Please pass a multibase decoder for strings that do not start with "1" or "Q"") told a user nothing.
      throw invalidInput(field, `${JSON.stringify(address)} names ${JSON.stringify(value)}, which is not a peer id (one such as 12D3KooW…, as a node prints it at start)`)
    }
  }
}
