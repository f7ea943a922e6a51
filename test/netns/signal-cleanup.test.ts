import { spawn, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { missingPrerequisite } from './topology.ts'
import { NODE_TS_FLAGS } from '../../tools/node-ts.ts'

const SCENARIO = fileURLToPath(new URL('./scenario.ts', import.meta.url))

const namespacesWith = (prefix: string) =>
  spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' })
    .stdout.split('\n')
    .map((l) => l.split(' ')[0]!)
    .filter((ns) => ns.startsWith(prefix))
const pidsIn = (ns: string) => spawnSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean).map(Number)
/** Whether `pid` still runs (a zombie waiting for its new parent to reap it does not). */
const alive = (pid: number) => {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return false
  }
}

/**
 * Runs scenario.ts (2:2:2 nodes, its namespaces named `phx<its pid>-`) until its node processes
 * are up, sends `signal`, and returns its exit code and what was left behind.
 */
async function interrupt(signal: 'SIGINT' | 'SIGTERM') {
  const child = spawn(process.execPath, [...NODE_TS_FLAGS, SCENARIO, '--a', '2', '--b', '2', '--c', '2'], { stdio: ['ignore', 'pipe', 'pipe'] })
  const prefix = `phx${child.pid! % 100000}-`
  let output = ''
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()))
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()))
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  // Up: its namespaces exist and node processes run inside them.
  const deadline = performance.now() + 90_000
  let nodePids: number[] = []
  while (nodePids.length < 3) {
    if (performance.now() > deadline || child.exitCode !== null) throw new Error(`scenario.ts never started its nodes; output:\n${output}`)
    await new Promise((r) => setTimeout(r, 200))
    nodePids = namespacesWith(prefix).flatMap(pidsIn)
  }
  const namespaces = namespacesWith(prefix)
  child.kill(signal)
  const code = await exited
  // SIGKILLed processes take a moment to be gone; 5 s is ample even on a loaded machine.
  for (let i = 0; i < 50 && nodePids.some(alive); i++) await new Promise((r) => setTimeout(r, 100))
  return { code, output, namespaces, left: namespacesWith(prefix), nodesAlive: nodePids.filter(alive) }
}

// No skipping: without root this fails with the reason.
describe('namespace scripts interrupted: what they created is removed', () => {
  it('SIGINT: scenario.ts removes its namespaces and node processes and exits 130', async () => {
    const missing = missingPrerequisite()
    if (missing !== undefined) throw new Error(`netns tests cannot run here: ${missing}`)
    const r = await interrupt('SIGINT')
    expect(r.namespaces.length).toBe(7) // 6 nodes and the router
    expect(r.code, r.output).toBe(130)
    expect(r.left).toEqual([])
    expect(r.nodesAlive).toEqual([])
    expect(r.output).toMatch(/SIGINT: removed 7 namespaces/)
  }, 120_000)

  it('SIGTERM: the same, exit 143', async () => {
    const r = await interrupt('SIGTERM')
    expect(r.code, r.output).toBe(143)
    expect(r.left).toEqual([])
    expect(r.nodesAlive).toEqual([])
  }, 120_000)
})
