import { afterAll, describe, expect, it } from 'vitest'
import { conflictWarning } from '../src/node-runner.ts'
import { startNode, type Started } from './helpers.ts'

const WARNING = /phoenix: warning: name "leader" is also claimed by (\S+); messages for it go to (\S+)/

describe('phoenix node and names claimed twice', () => {
  const nodes: Started[] = []
  afterAll(() => {
    for (const n of nodes) n.killGroup()
  })

  // Which node keeps the name depends on timing: a later claimant that hears the holder first
  // yields; two claims stored within nameContentionMs of each other go to the smaller id, so the
  // first node may be the one to yield. Either way the node that yields says so, naming the
  // holder; the holder hears of it only if the other's claim reached it (the transport README,
  // `name:conflict`), so its side is not asserted (packages/core/test/rules.test.ts covers it).
  it('the node that yields the name warns, naming the holder, which keeps its traffic', async () => {
    const first = startNode(['--name', 'leader'])
    nodes.push(first)
    const [, address, firstId] = await first.waitFor(/listening on (\S+\/p2p\/(\S+))/)
    const second = startNode(['--name', 'leader', '--name', 'solo', '--hub', address!])
    nodes.push(second)
    const [, secondId] = await second.waitFor(/listening on \S+\/p2p\/(\S+)/)
    const idOf = new Map([[first, firstId!], [second, secondId!]])
    const startedMs = Date.now()
    let warned: { node: Started; match: RegExpExecArray } | undefined
    while (warned === undefined) {
      for (const node of [first, second]) {
        const match = WARNING.exec(node.stderr)
        if (match !== null) warned = { node, match }
      }
      if (warned !== undefined) break
      if (Date.now() - startedMs > 30_000) throw new Error(`no warning within 30 s; first: ${first.stderr}; second: ${second.stderr}`)
      await new Promise((r) => setTimeout(r, 50))
    }
    const holder = idOf.get(warned.node === first ? second : first)
    console.log(`the ${warned.node === first ? 'first' : 'second'} node yielded "leader" after ${Date.now() - startedMs} ms`)
    expect(warned.match[0]).not.toMatch(/solo/)
    expect(warned.match[1]).toBe(holder)
    expect(warned.match[2]).toBe(holder)
  })
})

describe('the name conflict warning', () => {
  const up = () => true
  it('names the other claimants, never an empty list when they are all gone', () => {
    expect(conflictWarning({ name: 'x', owners: ['b', 'a'], winner: 'b' }, 'a', up)).toBe('phoenix: warning: name "x" is also claimed by b; messages for it go to b')
    expect(conflictWarning({ name: 'x', owners: ['a', 'b'], winner: 'a' }, 'a', up)).toBe('phoenix: warning: name "x" is also claimed by b; messages for it go to this node')
    // Seen by hand with three nodes claiming one name: the holder gave it up before the next claim arrived.
    const alone = conflictWarning({ name: 'x', owners: ['a'], winner: undefined }, 'a', up)
    expect(alone).not.toMatch(/claimed by ;|by $/)
    expect(alone).toMatch(/"x": the node this one yielded it to no longer holds it.*go to no reachable node$/)
  })

  it('says when the holder is not reachable, and why a restarted node does not get its name back at once', () => {
    const line = conflictWarning({ name: 'x', owners: ['old', 'new'], winner: 'old' }, 'new', (id) => id !== 'old')
    expect(line).toMatch(/go to old, not reachable now: .*unreachableRetentionMs.*--key/)
  })
})
