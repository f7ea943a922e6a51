import { afterAll, describe, expect, it } from 'vitest'
import { startNode, type Started } from './helpers.ts'

describe('phoenix node and names claimed twice', () => {
  const nodes: Started[] = []
  afterAll(() => {
    for (const n of nodes) n.killGroup()
  })

  // The claimant is always told; the holder only if the claimant's record reached it before the
  // claimant yielded (the transport README, `name:conflict`): which comes first is a race, so the
  // holder's side is not asserted here (packages/core/test/rules.test.ts: the holder refuses a claim that reaches it).
  it('warns the later claimant that the name is held, naming the holder, which keeps its traffic', async () => {
    const first = startNode(['--name', 'leader'])
    nodes.push(first)
    const [, address, holder] = await first.waitFor(/listening on (\S+\/p2p\/(\S+))/)
    const second = startNode(['--name', 'leader', '--name', 'solo', '--hub', address!])
    nodes.push(second)
    const [line] = await second.waitFor(/phoenix: warning: name "leader" is also claimed by \S+; messages for it go to .*/)
    expect(line).not.toMatch(/solo/)
    expect(line).toContain(`is also claimed by ${holder}; messages for it go to ${holder}`)
  })
})
