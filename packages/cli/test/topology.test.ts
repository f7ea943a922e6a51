import { afterAll, describe, expect, it } from 'vitest'
import type { Topology } from '@phoenix-overlay/transport'
import { membersTable, topologyTable } from '../src/commands/topology.ts'
import { phoenix, sleep, startNode, type Started } from './helpers.ts'

describe('phoenix topology and phoenix members', () => {
  const nodes: Started[] = []
  afterAll(() => {
    for (const n of nodes) n.killGroup()
  })

  it('prints each node with its declared or derived site and its colors, and the members of a group', async () => {
    const port = 24000 + (process.pid % 400) * 10
    const first = startNode(['--name', 'master', '--site', 'east', '--control', String(port)])
    nodes.push(first)
    const address = (await first.waitFor(/listening on (\S+)/))[1]!
    const second = startNode(['--name', 'worker/1', '--hub', address])
    nodes.push(second)
    await second.waitFor(/listening on/)
    let out = ''
    // A node's first record may carry no address yet (it is made before the node listens): its place reads "unknown" until the next one arrives.
    for (let i = 0; i < 100 && !(out.includes('worker/1') && !out.includes('unknown')); i++) {
      await sleep(100)
      out = (await phoenix(['topology', '--control', String(port)])).stdout
    }
    // Colors by sorted label: "east" (declared) before "localhost*" (derived from 127.0.0.1).
    expect(out).toMatch(/\(self\)\s+master\s+east\s+0\s+localhost\s+0\s+0\s+-/)
    expect(out).toMatch(/worker\/1\s+localhost\*\s+1\s+localhost\s+1\s+1\s+direct/)
    expect(out).toContain('* site derived from the address (no --site)')
    // Every site declared: no mark, so no footnote for it.
    const declared = JSON.parse((await phoenix(['topology', '--json', '--control', String(port)])).stdout) as Topology
    expect(topologyTable({ ...declared, nodes: declared.nodes.map((n) => ({ ...n, siteDeclared: true })) })).not.toContain('*')
    // Rows by site, host, hops and names after this node's own, whatever the ids (they were by full id).
    const node = (id: string, names: string[], site: number, host: number, nhops: number) => ({ ...declared.nodes[1]!, id, names, colors: [0, site, host] as [number, number, number], nhops })
    const shuffled = { ...declared, nodes: [declared.nodes[0]!, node('12D3KooWzz1', ['b/2'], 1, 1, 2), node('12D3KooWaa2', ['c/1'], 0, 0, 1), node('12D3KooWmm3', ['b/1'], 1, 1, 2), node('12D3KooWbb4', ['a/1'], 1, 0, 1)] }
    const order = topologyTable(shuffled).split('\n').slice(1, 6).map((line) => line.split(/\s+/)[line.includes('(self)') ? 2 : 1])
    expect(order).toEqual(['master', 'c/1', 'a/1', 'b/1', 'b/2'])
    const json = JSON.parse((await phoenix(['topology', '--json', '--control', String(port)])).stdout) as { levels: string[]; nodes: unknown[] }
    expect(json.levels).toEqual(['overlay', 'site', 'host'])
    expect(json.nodes).toHaveLength(2)
    expect((await phoenix(['members', 'worker/*', '--control', String(port)])).stdout).toMatch(/^NAME\s+NODE\nworker\/1\s+12D3\S+\n$/)
    // No match: one line saying so (it printed the header alone), on stdout, exit 0; --json stays [].
    const none = await phoenix(['members', 'nobody*', '--control', String(port)])
    expect([none.stdout, none.code]).toEqual(["no reachable name matches 'nobody*'\n", 0])
    expect((await phoenix(['members', 'nobody*', '--json', '--control', String(port)])).stdout.trim()).toBe('[]')
    // A pattern without '*' is a whole name: 'worker' does not list worker/1, and the line says so.
    expect(membersTable('worker', [])).toBe("no reachable name matches 'worker' (a pattern matches whole names: 'worker*' also matches those that start with it)\n")
    const bad = await phoenix(['members', '', '--control', String(port)])
    expect(bad.stderr).toMatch(/pattern must be a non-empty string/)
    expect(bad.code).not.toBe(0)
  }, 60_000)
})
