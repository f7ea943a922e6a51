/**
 * What a member sees when it claims a name another live node holds (issue 14). Real processes on
 * loopback in one private network: hub H, X holding `svc`, and B; then Y joins claiming `svc` at
 * start, and B claims it at run time. Printed: what each node resolves `svc` to, and each one's
 * name conflicts (`PhoenixCore.nameConflicts()`: holder and refused claimants) and own names.
 *
 *   npx tsx packages/transport/bench/names.ts
 */
import { generateKey } from '@libp2p/pnet'
import { MemberProcess, type NodeState } from './member-process.ts'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const key = new Uint8Array(95)
generateKey(key)
const psk = Buffer.from(key).toString('hex')
const base = 45000 + (process.pid % 500) * 4
const processes: MemberProcess[] = []
const start = (label: string, port: number, hubs: string[], names: string[]) => {
  const child = new MemberProcess(label, { role: 'node', port, psk, hubs, names, watch: ['svc'] })
  processes.push(child)
  return child
}
try {
  const H = start('H', base, [], [])
  const hub = (await H.line(/^ready /)).slice(6)
  const X = start('X', base + 1, [hub], ['svc'])
  const B = start('B', base + 2, [hub], [])
  await Promise.all([X.line(/^ready /), B.line(/^ready /)])
  for (let i = 0; i < 80 && (await B.state()).resolved.svc === null; i++) await sleep(250)
  const Y = start('Y', base + 3, [hub], ['svc'])
  await Y.line(/^ready /)
  await sleep(3_000)
  await B.addName('svc')
  await sleep(2_000)
  const nodes = { H, X, B, Y }
  const states = Object.fromEntries(await Promise.all(Object.entries(nodes).map(async ([label, p]) => [label, await p.state()] as const))) as Record<string, NodeState>
  const label = (id: string | null | undefined) => Object.entries(states).find(([, s]) => s.id === id)?.[0] ?? String(id)
  console.log(`X holds "svc"; Y joins claiming "svc" at start; then B claims it at run time (addName).`)
  for (const [name, s] of Object.entries(states)) {
    const conflicts = s.conflicts.map((c) => `${c.name}: held by ${label(c.holder)}, refused ${c.refused.map(label).join(',')}`)
    console.log(`  ${name}: "svc" → ${label(s.resolved.svc)}; own names [${s.names.join(', ')}]; conflicts: ${conflicts.length === 0 ? 'none' : conflicts.join('; ')}; claims refused here: ${s.stats.claimsRefused}`)
  }
} finally {
  await Promise.all(processes.map((p) => p.kill()))
}
