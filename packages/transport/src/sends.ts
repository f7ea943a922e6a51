import type { UndeliverableReason } from '@phoenix-overlay/wire'
import type { SendResult } from './api.ts'
import { PhoenixTransportError, invalidInput, shown } from './errors.ts'
import { CALLER_IDS_MAX } from './constants.ts'
import { DuplicateWindow } from './duplicate-window.ts'
import { MessageIds } from './message-ids.ts'

const MESSAGE_ID_MODULUS = 2 ** 32

interface PendingAck {
  readonly owner: string
  readonly resolve: (result: SendResult) => void
  readonly reject: (error: Error) => void
  readonly timer: ReturnType<typeof setTimeout>
}

export type Route = { owner: string; nextHop: string; nhops: number }

/**
 * Our sends in flight: message ids, the sends waiting for an acknowledgement, and the sends
 * waiting for a route. Message ids are uint32 (the wire's), never 0, a secret permutation of a
 * counter (message-ids.ts): no one can guess our next ids from the ones they saw, and a node
 * restarted with the same identity (a new key for the permutation) is unlikely to reuse recent
 * ones, which receivers would take for repeats of old messages.
 */
export class Sends {
  private readonly ids = new MessageIds()
  private readonly pendingAcks = new Map<number, PendingAck>()
  private readonly routeWaiters = new Set<() => void>()
  /** Ids of sends waiting for a route (at most pendingRouteWaitsMax): taken, though not yet waiting for an ack. */
  private readonly waitingIds = new Set<number>()
  /** The last CALLER_IDS_MAX ids the application chose, under one empty source. */
  private readonly callerIds = new DuplicateWindow(CALLER_IDS_MAX)

  constructor(private readonly limits: { readonly pendingAcksMax: number; readonly pendingRouteWaitsMax: number }) {}

  /** A new id, or the caller's (a retry) after checking it. */
  allocate(requested: number | undefined): number {
    if (requested !== undefined) {
      if (!Number.isInteger(requested) || requested < 1 || requested >= MESSAGE_ID_MODULUS) throw invalidInput('options.messageId', `must be an integer in [1, 2^32), got ${shown(requested)}`)
      if (this.pendingAcks.has(requested)) throw invalidInput('options.messageId', `${requested} is already waiting for its acknowledgement`)
      if (this.waitingIds.has(requested)) throw invalidInput('options.messageId', `${requested} is already taken by a send waiting for a route`)
      if (!this.callerIds.has('', requested)) this.callerIds.remember('', requested)
      return requested
    }
    let id = this.ids.next()
    while (this.pendingAcks.has(id) || this.waitingIds.has(id)) id = this.ids.next() // a retry's own id took it
    return id
  }

  /** Whether `messageId` is one of our sends' (drawn by us, or chosen by the application lately). */
  isOurs(messageId: number): boolean {
    return this.ids.issued(messageId) || this.callerIds.has('', messageId)
  }

  get pendingCount(): number {
    return this.pendingAcks.size
  }

  /** Registers a send that waits for `owner`'s ack; checks the bound first (nothing is sent if full). */
  expectAck(messageId: number, owner: string, name: string, timeoutMs: number): Promise<SendResult> {
    if (this.pendingAcks.size >= this.limits.pendingAcksMax) {
      throw new PhoenixTransportError('QUEUE_FULL', `${this.pendingAcks.size} sends already wait for acknowledgements (limits.pendingAcksMax)`, { messageId })
    }
    return new Promise<SendResult>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pendingAcks.delete(messageId)
        reject(new PhoenixTransportError('ACK_TIMEOUT', `no acknowledgement from ${owner} for message ${messageId} to "${name}" within ${timeoutMs} ms; it may or may not have been delivered`, { messageId }))
      }, timeoutMs)
      this.pendingAcks.set(messageId, { owner, resolve, reject, timer })
    })
  }

  /** The send failed before it left: no ack will come. */
  forget(messageId: number): void {
    const pending = this.pendingAcks.get(messageId)
    if (pending === undefined) return
    clearTimeout(pending.timer)
    this.pendingAcks.delete(messageId)
  }

  /** An ack from `from`: true if it settled a send of ours. */
  acked(messageId: number, from: string): boolean {
    const pending = this.take(messageId, from)
    pending?.resolve({ messageId })
    return pending !== undefined
  }

  /**
   * An undeliverable notice: true if it settled an acknowledged send. Any node on the path may
   * refuse a message, so the refusing node need not be the owner.
   */
  refused(messageId: number, from: string, reason: UndeliverableReason): boolean {
    const pending = this.take(messageId, undefined)
    pending?.reject(new PhoenixTransportError('UNDELIVERABLE', `node ${from} could not deliver message ${messageId}: ${reason}`, { messageId, reason, node: from }))
    return pending !== undefined
  }

  private take(messageId: number, from: string | undefined): PendingAck | undefined {
    const pending = this.pendingAcks.get(messageId)
    if (pending === undefined || (from !== undefined && pending.owner !== from)) return undefined
    clearTimeout(pending.timer)
    this.pendingAcks.delete(messageId)
    return pending
  }

  /** Waits up to `timeoutMs` for `lookup` to find a route, holding `messageId` meanwhile (a second send with it is refused); `stopped` ends the wait early. */
  async waitForRoute(messageId: number, name: string, timeoutMs: number, lookup: () => Route | undefined, stopped: () => boolean, whyNot: () => string | undefined = () => undefined): Promise<Route> {
    this.waitingIds.add(messageId)
    try {
      return await this.untilRoute(messageId, name, timeoutMs, lookup, stopped, whyNot)
    } finally {
      this.waitingIds.delete(messageId)
    }
  }

  private untilRoute(messageId: number, name: string, timeoutMs: number, lookup: () => Route | undefined, stopped: () => boolean, whyNot: () => string | undefined): Promise<Route> {
    if (this.routeWaiters.size >= this.limits.pendingRouteWaitsMax) {
      return Promise.reject(new PhoenixTransportError('QUEUE_FULL', `${this.routeWaiters.size} sends already wait for routes (limits.pendingRouteWaitsMax)`))
    }
    return new Promise((resolve, reject) => {
      const check = () => {
        const route = stopped() ? undefined : lookup()
        if (route !== undefined) {
          done()
          resolve(route)
        } else if (stopped()) {
          done()
          reject(new PhoenixTransportError('NOT_STARTED', `the node stopped while "${name}" waited for a route; nothing was sent`, { messageId }))
        }
      }
      const timer = setTimeout(() => {
        done()
        const why = whyNot()
        reject(new PhoenixTransportError('NO_ROUTE', `no route to a node named "${name}" after waiting ${timeoutMs} ms${why === undefined ? '' : `: ${why}`}`, { messageId }))
      }, timeoutMs)
      const done = () => {
        clearTimeout(timer)
        this.routeWaiters.delete(check)
      }
      this.routeWaiters.add(check)
    })
  }

  /** Routes changed (or the node stops): every waiting send looks again. */
  routesChanged(): void {
    for (const check of [...this.routeWaiters]) check()
  }

  /** The node stopped: every send still waiting for an ack fails (it may have been delivered). */
  failAll(): void {
    for (const [messageId, pending] of this.pendingAcks) {
      clearTimeout(pending.timer)
      pending.reject(new PhoenixTransportError('NOT_STARTED', `the node stopped before message ${messageId} was acknowledged; it may or may not have been delivered`, { messageId }))
    }
    this.pendingAcks.clear()
    this.routesChanged()
  }
}
