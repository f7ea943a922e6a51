/**
 * Repeats the discovery run of overlay.test.ts's first test on one topology and, after each
 * convergence, keeps taking snapshots for a few seconds: a route failure then is what that test
 * saw three times in ~40 runs on a loaded machine (a link replaced right after convergence, both
 * ends withdrawn at every node: the core's connections.ts). Per run it prints the links replaced
 * (`streams_replaced`) before and after convergence, the nodes whose route was withdrawn at least
 * once (in a run with no crash or leave a node issues a number above its start-up one, 2, only
 * then), the closes the transport held while its own stream was being opened
 * (second-streams.ts), and the first failing snapshot with both ends' logs. Root, like the test:
 *
 *   DEBUG='phoenix:*:error,phoenix:node' npx tsx test/netns/after-convergence.ts --runs 10
 *
 * (phoenix:node's debug lines name every link closed and why.)
 */
import { Overlay, type OverlayNode } from './overlay.ts'
import { DEFAULT_SUBNETS, timedRun } from './scenario.ts'
import { cleanUpOnSignals } from './signal-cleanup.ts'
import { buildTopology } from './topology.ts'

/** How long each run is watched after it converged. */
const WATCH_MS = 8_000
/** The start-up number of every node's record (its addresses set once it listens). */
const START_SEQ = 2

cleanUpOnSignals()
const { intOption, scriptArgs } = await import('../../tools/script-args.ts')
const { values } = scriptArgs({ options: { runs: { type: 'string', default: '5' } } }, { summary: 'route failures right after convergence, over repeated discovery runs in namespaces (root)', help: { runs: 'discovery runs' } })
const runs = intOption(values, 'runs', 1)
const topology = await buildTopology(DEFAULT_SUBNETS, { prefix: `phxa${process.pid % 10000}-` })
const overlay = await Overlay.prepare(topology)
const count = async (n: OverlayNode, name: string) => Number(new RegExp(`^phoenix_${name}_total (\\d+)$`, 'm').exec(await overlay.metrics(n))?.[1] ?? 0)
const sum = async (name: string) => (await Promise.all(overlay.alive().map((n) => count(n, name)))).reduce((a, b) => a + b, 0)
const lines = (pattern: RegExp) => overlay.alive().flatMap((n) => (n.process?.output ?? []).filter((l) => pattern.test(l)).map((l) => `${n.node.id}: ${l.slice(0, 200)}`))
let failedRuns = 0
try {
  for (let i = 0; i < runs; i++) {
    await overlay.stopAll()
    const run = await timedRun(overlay, 'discovery', 120_000)
    const convergedAt = performance.now()
    const replacedAtConvergence = await sum('streams_replaced')
    let bad = 0
    let first: string | undefined
    while (performance.now() - convergedAt < WATCH_MS) {
      const s = await overlay.snapshot()
      if (s.routeFailures > 0 || s.missingLinks.length > 0) {
        bad++
        if (first === undefined) {
          const logs = s.failing.map((n) => `--- ${n.node.id}:\n${(n.process?.output ?? []).filter((l) => /down|closing|held|error/i.test(l)).slice(-20).join('\n')}`)
          first = `${(performance.now() - convergedAt).toFixed(0)} ms after: ${s.routeFailures} route failures, missing links [${s.missingLinks.join(' ')}]: ${s.detail}\n${logs.join('\n')}`
        }
      }
      await new Promise((r) => setTimeout(r, 50))
    }
    const withdrawn: string[] = []
    const routes = new Map(await Promise.all(overlay.alive().map(async (n) => [n, (await overlay.call(n, 'GET', '/routes')).json as { destination: string; seq: number }[]] as const)))
    for (const n of overlay.alive()) {
      const top = Math.max(0, ...[...routes].filter(([m]) => m !== n).map(([, rs]) => rs.find((r) => r.destination === n.peerId)?.seq ?? 0))
      if (top > START_SEQ) withdrawn.push(`${n.node.id}:${top}`)
    }
    if (bad > 0) failedRuns++
    console.log(`run ${i}: converged ${run.convergedMs.toFixed(0)} ms; links replaced ${replacedAtConvergence} by then, ${await sum('streams_replaced')} after ${WATCH_MS} ms; withdrawn at least once: ${withdrawn.length} [${withdrawn.join(' ')}]; failing snapshots after convergence: ${bad}`)
    for (const line of lines(/held as replaced|brought no stream/)) console.log(`  held: ${line}`)
    if (first !== undefined) console.log(`  first: ${first}`)
  }
  console.log(`${failedRuns} of ${runs} runs saw a route failure after convergence`)
} finally {
  await overlay.destroy()
  await topology.destroy()
}
