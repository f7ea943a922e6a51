import type { PhoenixCore, UpdateMessage } from '@phoenix-overlay/core'
import { encodeUpdateFrames } from '@phoenix-overlay/wire'
import type { NameConflict } from './api.ts'
import { CoreDriver, type DriverSink } from './core-driver.ts'
import { Router } from './forwarding.ts'
import { Neighbours } from './neighbours.ts'
import { describeError, type NodeParts } from './parts.ts'

/**
 * One run of the node, from `start` to `stop`: the routing core and its driver, the neighbours
 * and the router. A restart makes a new one, so nothing of a stopped run is left to go stale.
 */
export class Session implements DriverSink {
  readonly driver: CoreDriver
  readonly neighbours: Neighbours
  readonly router: Router
  /** Conflicts already reported (name and claimants), so each is raised once. */
  private reportedConflicts = new Set<string>()

  constructor(
    private readonly parts: NodeParts,
    core: PhoenixCore,
  ) {
    this.driver = new CoreDriver(core, this)
    this.neighbours = new Neighbours(parts, this.driver)
    this.router = new Router(parts, this.driver, this.neighbours)
    this.neighbours.handler = this.router
  }

  get core(): PhoenixCore {
    return this.driver.core
  }

  // ------------------------------------------------------------ DriverSink

  dial(address: string): void {
    this.neighbours.dial(address)
  }

  close(peer: string, reason: string): void {
    this.neighbours.closeOurs(peer, reason)
  }

  sendUpdate(peer: string, message: UpdateMessage): void {
    const neighbour = this.neighbours.get(peer)
    if (neighbour === undefined) return // gone already: the core hears connectionDown
    if (neighbour.leaving || neighbour.tap.writeClosed) return // it announced its leave: it needs no more of our table
    for (const frame of encodeUpdateFrames(message)) {
      this.parts.metrics.count('updates_sent')
      if (!this.neighbours.send(peer, frame)) {
        // Routing updates are never dropped: a neighbour that cannot take them is disconnected,
        // and the core resends its table when the connection comes back.
        neighbour.link.abort('outbound queue full while sending a routing update')
        break
      }
    }
    this.parts.metrics.count('update_entries_sent', message.entries.length)
  }

  resumeLinks(): void {
    this.neighbours.resumeAll()
  }

  routesChanged(): void {
    this.parts.sends.routesChanged()
    this.parts.routesChanged()
    this.checkNameConflicts()
  }

  internalError(where: string, error: unknown): void {
    this.parts.metrics.count('internal_errors')
    this.parts.log.error('internal error in %s: %s', where, describeError(error))
  }

  // ------------------------------------------------------------ names

  /** Conflicts among the names we know of, now. */
  nameConflicts(): NameConflict[] {
    return this.core.nameConflicts().map(({ name, holder, refused }) => {
      const owners = [...(holder !== undefined ? [holder] : []), ...refused]
      return { name, owners, winner: holder, ours: owners.includes(this.parts.id) }
    })
  }

  /** Raises `name:conflict` once for each new conflict (a name, its set of claimants). */
  checkNameConflicts(): void {
    const current = new Set<string>()
    for (const conflict of this.nameConflicts()) {
      const key = `${conflict.name}\n${[...conflict.owners].sort().join(' ')}`
      current.add(key)
      if (this.reportedConflicts.has(key)) continue
      this.parts.log('name %s is claimed by %d nodes: %s', conflict.name, conflict.owners.length, conflict.owners.join(' '))
      this.parts.metrics.count('name_conflicts')
      this.parts.emit('name:conflict', conflict)
    }
    this.reportedConflicts = current
  }

  // ------------------------------------------------------------ leaving

  /**
   * A graceful leave, in order: take no new data (every data frame that reaches us now, for us
   * or through us, is bounced `leaving`, including frames held back while a link was paused);
   * write out the data already queued (at most `leaveFlushMaxMs`), so its acks can come back;
   * announce the leave; keep reading until each neighbour, having heard it, has written what it
   * had queued for us and closed its side (at most `leaveLingerMaxMs`), so nothing it sent is
   * lost; then write out every queue (the farewells, the acks we owe, the bounces) and close
   * the links, aborting any that cannot be written within `leaveFlushMaxMs`.
   */
  async leave(): Promise<void> {
    const { core, driver, router, neighbours } = this
    router.leaving = true
    neighbours.closing = true
    neighbours.holdRemoteCloses()
    this.resumeLinks()
    await neighbours.dataWritten(this.parts.timing.leaveFlushMaxMs, () => router.credit.waiting.frames)
    if (!core.hasLeft) driver.perform(core.leave(driver.now()))
    await neighbours.closeAll('leaving', this.parts.timing.leaveLingerMaxMs, this.parts.timing.leaveFlushMaxMs)
    driver.stop()
  }
}
