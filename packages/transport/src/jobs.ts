import type { Logger } from '@libp2p/interface'
import { sourceHopLimit } from '@phoenix-overlay/wire'
import type { NameChange } from './groups.ts'
import { receivedMessage } from './inbox.ts'
import { Collectives, type BroadcastResult, type NodeInbox, type ReduceOptions, type ReduceResult } from './collectives.ts'
import { Groups, reachableNames, type Member } from './groups.ts'
import type { Sends } from './sends.ts'
import type { Session } from './session.ts'
import { buildTopology, type Topology } from './topology.ts'

/** What the job API needs of the node (service.ts). */
export interface JobsNode {
  readonly id: string
  readonly log: Logger
  readonly sends: Sends
  readonly inbox: NodeInbox
  /** The running session, or NOT_STARTED naming `what`. */
  running(what: string): Session
  /** The session if there is one (queries answer empty without). */
  current(): Session | undefined
  emit(change: NameChange): void
}

/**
 * The node's API for jobs: topology (topology.ts), name groups and their events (groups.ts),
 * collectives (collectives.ts), wired to one node. The service delegates to it.
 */
export class Jobs {
  readonly groups: Groups
  readonly collectives: Collectives

  constructor(private readonly node: JobsNode) {
    this.groups = new Groups(() => {
      const session = node.current()
      return session === undefined ? new Map() : reachableNames(session.core)
    }, (change) => this.nameChanged(change))
    this.collectives = new Collectives({
      id: node.id,
      log: node.log,
      topology: () => this.topology(),
      members: (pattern) => this.groups.members(pattern),
      ownNames: () => node.current()?.core.names ?? [],
      allocateId: () => node.sends.allocate(undefined),
      sendToNode: (to, bytes) => this.sendToNode(to, bytes),
      deliver: (message) => node.inbox.accept(message),
    })
    node.inbox.nodeMessages = (message) => this.collectives.handle(message)
  }

  start(): void {
    this.groups.start()
  }

  stop(): void {
    this.groups.stop()
    this.collectives.stop()
  }

  topology(): Topology {
    const session = this.node.current()
    if (session === undefined) return buildTopology({ id: this.node.id, names: [], addresses: [] }, [], [])
    return buildTopology({ id: this.node.id, names: session.core.names, addresses: session.core.addresses }, session.core.routes(), session.neighbours.ids())
  }

  members(pattern: string): Member[] {
    return this.groups.members(pattern)
  }

  /** A name came or went: the event, and collectives stop waiting on a node that is gone. */
  private nameChanged(change: NameChange): void {
    this.node.emit(change)
    const reachable = this.node.current()?.core.routes().some((r) => r.destination === change.node && r.reachable) === true
    if (change.type === 'down' && !reachable) this.collectives.nodeDown(change.node)
  }

  /** A collective step to one node (itself included, answered on a later turn): a frame addressed to the node, name ''. */
  private sendToNode(to: string, payload: Uint8Array): void {
    const session = this.node.running('collective')
    const messageId = this.node.sends.allocate(undefined)
    if (to === this.node.id) return void setImmediate(() => this.node.inbox.accept(receivedMessage({ from: to, name: '', hops: 0, messageId }, payload)))
    session.router.routeData({ source: this.node.id, destination: to, name: '', ...sourceHopLimit(session.core.limits.hopLimit), messageId, ackRequested: false, payload }, undefined)
  }

  // Async, so a stopped node's NOT_STARTED is a rejection like send's and allreduce's (it was thrown at the call).
  async broadcast(pattern: string, payload: Uint8Array, options?: { ack?: boolean; timeoutMs?: number }): Promise<BroadcastResult> {
    this.node.running('broadcast')
    return this.collectives.broadcast(pattern, payload, options)
  }

  async reduce(pattern: string, tag: string, options: ReduceOptions): Promise<ReduceResult> {
    this.node.running('reduce')
    return this.collectives.reduce(pattern, tag, options)
  }

  async allreduce(pattern: string, tag: string, options: ReduceOptions): Promise<ReduceResult & { broadcast: BroadcastResult | undefined }> {
    const reduced = await this.reduce(pattern, tag, options)
    const broadcast = reduced.value === undefined ? undefined : await this.broadcast(pattern, reduced.value, { ack: true, ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }) })
    return { ...reduced, broadcast }
  }

  contribute(name: string, tag: string, value: Uint8Array): void {
    this.node.running('contribute')
    this.collectives.contribute(name, tag, value)
  }
}
