import { afterAll, describe, expect, it } from 'vitest'
import { startNode, type Started } from './helpers.ts'

describe('phoenix node and names claimed twice', () => {
  const nodes: Started[] = []
  afterAll(() => {
    for (const n of nodes) n.killGroup()
  })

  it('warns, on both nodes, when another node claims one of its names', async () => {
    const first = startNode(['--name', 'leader'])
    nodes.push(first)
    const address = (await first.waitFor(/listening on (\S+)/))[1]!
    const second = startNode(['--name', 'leader', '--name', 'solo', '--hub', address])
    nodes.push(second)
    const [line] = await second.waitFor(/phoenix: warning: name "leader" is also claimed by \S+; messages for it go to .*/)
    expect(line).not.toMatch(/solo/)
    await first.waitFor(/phoenix: warning: name "leader" is also claimed by/)
  })
})
