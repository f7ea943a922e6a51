import { TypedEventEmitter } from '@libp2p/interface'
import { afterAll, describe, expect, it } from 'vitest'
import { DEFAULT_LIMITS } from '@phoenix-overlay/core'
import { PhoenixTransportError, type NameConflict } from '../src/index.ts'
import { FakeNode } from './fake-node.ts'
import { TestNodes, addressOf, text, waitUntil } from './nodes.ts'

describe('lifecycle: start and stop are idempotent and safe in any order (issue 11, item 3)', () => {
  const nodes = new TestNodes()
  afterAll(() => nodes.stopAll())

  it('stop before start, and stop twice, do nothing; queries are empty and sends fail NOT_STARTED', async () => {
    const fake = await FakeNode.create({ names: ['mine'] })
    await fake.node.stop()
    await fake.node.stop()
    expect(fake.node.routes()).toEqual([])
    expect(fake.node.peers()).toEqual([])
    await expect(fake.node.send('x', text('x'))).rejects.toMatchObject({ code: 'NOT_STARTED' })
    expect(() => fake.node.addName('other')).toThrow(PhoenixTransportError)
    // The collectives reject as send does: broadcast and reduce threw at the call (found by a new user).
    const calls = [() => fake.node.broadcast('*', text('x')), () => fake.node.reduce('*', 't', { op: 'sum' }), () => fake.node.allreduce('*', 't', { op: 'sum' })]
    for (const call of calls) {
      let promise: Promise<unknown> | undefined
      expect(() => (promise = call())).not.toThrow()
      await expect(promise).rejects.toMatchObject({ code: 'NOT_STARTED' })
    }
  })

  it('start twice keeps one core and one protocol handler; the node goes on routing', async () => {
    const hub = await nodes.start({ names: ['hub'] })
    const member = await nodes.start({ names: ['member'], hubs: [addressOf(hub)] })
    member.phoenix.addEventListener('message', () => {})
    await hub.phoenix.send('member', text('before'), { ack: true })
    const peersBefore = hub.phoenix.peers()
    await member.phoenix.start()
    await Promise.all([member.phoenix.start(), member.phoenix.start()])
    await hub.phoenix.send('member', text('after'), { ack: true })
    expect(hub.phoenix.peers()).toEqual(peersBefore)
    expect(hub.phoenix.metricsText()).toMatch(/^phoenix_peers_dropped_total 0$/m)
  })

  it('after stop nothing is stale (routes and peers empty); start after stop joins again', async () => {
    const hub = await nodes.start({ names: ['hub2'] })
    const member = await nodes.start({ names: ['member2'], hubs: [addressOf(hub)] })
    member.phoenix.addEventListener('message', () => {})
    await hub.phoenix.send('member2', text('one'), { ack: true })
    expect(member.phoenix.routes().length).toBeGreaterThan(0)
    await member.libp2p.stop()
    await member.phoenix.stop()
    expect(member.phoenix.routes()).toEqual([])
    expect(member.phoenix.peers()).toEqual([])
    expect(member.phoenix.resolve('hub2')).toBeUndefined()
    await expect(member.phoenix.send('hub2', text('x'))).rejects.toMatchObject({ code: 'NOT_STARTED' })
    // Iterators opened on the stopped node end (a `for await` there hung, waiting for a start).
    const within = <T>(p: Promise<T>) => Promise.race([p, new Promise<'pending'>((resolve) => setTimeout(() => resolve('pending'), 1_000))])
    expect(await within(member.phoenix.messages().next())).toEqual({ value: undefined, done: true })
    expect(await within(member.phoenix.watch('*').next())).toEqual({ value: undefined, done: true })
    await member.libp2p.start()
    await hub.phoenix.send('member2', text('two'), { ack: true, routeWaitMs: 10_000 })
    // Started again, they wait for what comes.
    const watching = member.phoenix.watch('hub2').next()
    expect(await within(watching)).toMatchObject({ done: false, value: { type: 'up', name: 'hub2' } })
  })

  it('a start called while a stop is under way waits for it, then starts: the node ends started, not stopped', async () => {
    const hub = await nodes.start({ names: ['hub3'] })
    const member = await nodes.start({ names: ['member3'], hubs: [addressOf(hub)] })
    await Promise.all([member.phoenix.stop(), member.phoenix.start()])
    expect(member.phoenix.addName('later')).toBe(true)
    member.phoenix.addEventListener('message', () => {})
    await hub.phoenix.send('later', text('back'), { ack: true, routeWaitMs: 10_000 })
  })
})

describe('a libp2p service by the book (issue 13, item 5)', () => {
  it('is a TypedEventEmitter: listeners get typed events, no casts', async () => {
    const fake = await FakeNode.create({ names: ['mine'] })
    expect(fake.node).toBeInstanceOf(TypedEventEmitter)
    expect(fake.node.listenerCount('message')).toBe(0)
  })

  it('hands its counters and gauges to libp2p metrics when the host has them', async () => {
    const groups = new Map<string, () => Record<string, number>>()
    const metrics = {
      registerCounterGroup: (name: string, options: { calculate: () => Record<string, number> }) => void groups.set(name, options.calculate),
      registerMetricGroup: (name: string, options: { calculate: () => Record<string, number> }) => void groups.set(name, options.calculate),
    }
    const fake = await FakeNode.create({ names: ['mine'], timing: { leaveLingerMaxMs: 0 } }, { metrics } as never)
    await fake.node.start()
    const { peer } = await fake.connect()
    expect([...groups.keys()].sort()).toEqual(['phoenix_events_total', 'phoenix_state'])
    expect(groups.get('phoenix_events_total')!()).toMatchObject({ neighbours_up: 1 })
    expect(groups.get('phoenix_state')!()).toMatchObject({ neighbours: 1 })
    expect(fake.node.peers()).toEqual([peer])
    await fake.node.stop()
  })
})

describe('name conflicts are visible (issue 11, item 7)', () => {
  const nodes = new TestNodes()
  afterAll(() => nodes.stopAll())

  it('adding a name another node holds raises name:conflict at the claimant, naming the holder, and the name stays with its holder', async () => {
    const owner = await nodes.start({ names: ['leader'] })
    const other = await nodes.start({ names: ['worker'], hubs: [addressOf(owner)] })
    await waitUntil('each knows the other', () => other.phoenix.resolve('leader') !== undefined && owner.phoenix.resolve('worker') !== undefined)
    const atOther: NameConflict[] = []
    other.phoenix.addEventListener('name:conflict', (event) => atOther.push(event.detail))
    // addName says so: false, the claim refused; a free name is claimed (true), and so is one held already.
    expect(other.phoenix.addName('leader')).toBe(false)
    expect(other.phoenix.names).not.toContain('leader')
    expect([other.phoenix.addName('deputy'), other.phoenix.addName('deputy')]).toEqual([true, true])
    expect(() => other.phoenix.removeName(5 as unknown as string)).toThrow(/name must be a non-empty string/)
    // The overlay's own names are refused both ways (removing a declared site's name made the node's site unknown).
    expect(() => other.phoenix.removeName('@site/east/x')).toThrow(/^name "@site\/east\/x": names starting with '@' are reserved for the overlay$/)
    // And no send goes there: it reached an application that never claimed the name (found by a new user).
    await expect(other.phoenix.send('@site/east/x', new Uint8Array(1), { ack: true })).rejects.toMatchObject({ code: 'INVALID_INPUT', field: 'name' })
    // Past the limit: one line naming the field once (it said "name: name: 65 names …").
    for (let i = other.phoenix.names.length; i < DEFAULT_LIMITS.namesPerNodeMax; i++) other.phoenix.addName(`extra-${i}`)
    expect(() => other.phoenix.addName('one-too-many')).toThrow(new RegExp(`^name: ${DEFAULT_LIMITS.namesPerNodeMax + 1} names, at most ${DEFAULT_LIMITS.namesPerNodeMax} per node \\(namesPerNodeMax\\)$`))
    for (let i = 0; i < DEFAULT_LIMITS.namesPerNodeMax; i++) other.phoenix.removeName(`extra-${i}`)
    const ownerId = owner.libp2p.peerId.toString()
    const otherId = other.libp2p.peerId.toString()
    // Refused at once (the core's rule: the first claimant holds a name while its record lives).
    expect(atOther).toHaveLength(1)
    expect(atOther[0]).toMatchObject({ name: 'leader', ours: true, winner: ownerId })
    expect(atOther[0]!.owners).toEqual([ownerId, otherId])
    expect(other.phoenix.resolve('leader')?.owner).toBe(ownerId)
    expect(owner.phoenix.resolve('worker')?.owner).toBe(otherId)
    // The holder keeps its traffic: a message for the name still reaches it.
    const got = owner.phoenix.messages()
    await other.phoenix.send('leader', new Uint8Array([7]), { ack: true })
    expect([...((await got.next()).value?.payload ?? [])]).toEqual([7])
    await got.return?.()
    // Raised once per conflict, not on every update.
    await new Promise((r) => setTimeout(r, 200))
    expect(atOther).toHaveLength(1)
  })
})
