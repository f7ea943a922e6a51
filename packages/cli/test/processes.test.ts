import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { SIGNAL_ECHO_MS, STOP_GRACE_MS } from '../src/constants.ts'
import { callControl } from '../src/control-client.ts'
import { processInfo } from '../src/proc.ts'
import { processTree, REPO, sleep, start, tempDir, waitGone, type Started } from './helpers.ts'

// Each way the README starts a node. For npx and `npx pnpm exec` the pid a user (or job manager)
// holds is npm's (or, with node_modules/.bin on PATH, that of pnpm's shell shim running npm), and
// between it and Node sit `sh -c` and more shims that do not pass signals on. The bin execs Node.
const WAYS: Record<string, (args: string[]) => Started> = {
  npx: (args) => start('npx', ['phoenix', ...args]),
  bin: (args) => start(join(REPO, 'node_modules/.bin/phoenix'), args),
  'pnpm exec': (args) => start('npx', ['-y', 'pnpm@10', 'exec', 'phoenix', ...args]),
}

const running: Started[] = []
afterAll(() => {
  for (const s of running.splice(0)) s.killGroup()
})

/** Starts a node one way and returns it with its whole process tree and Node's own pid. */
async function startWay(way: string): Promise<{ node: Started; tree: Set<number>; nodePid: number; socket: string }> {
  const socket = join(tempDir('proc'), 'control.sock')
  const node = WAYS[way]!(['node', '--name', 'proc', '--control', socket])
  running.push(node)
  await node.waitFor(/control endpoint on/)
  const tree = processTree(node.pid)
  // Node itself: the process in the tree that runs the CLI's script (launchers name only the bin).
  const nodes = [...tree].filter((pid) => processInfo(pid)?.command.includes('bin/phoenix.js node'))
  const shims = nodes.filter((pid) => /^\/bin\/sh /.test(processInfo(pid)!.command))
  const nodePids = nodes.filter((pid) => !shims.includes(pid))
  expect(nodePids).toHaveLength(1)
  const nodePid = nodePids[0]!
  expect((await callControl({ socketPath: socket }, 'GET', '/status')).status).toBe(200)
  return { node, tree, nodePid, socket }
}

describe.concurrent(`phoenix node stops within STOP_GRACE_MS (${STOP_GRACE_MS} ms), leaving gracefully, whoever gets the signal`, () => {
  for (const way of Object.keys(WAYS)) {
    it(`SIGTERM to the pid that \`${way}\` started stops every process it started`, async () => {
      const { node, tree } = await startWay(way)
      process.kill(node.pid, 'SIGTERM')
      const ms = await waitGone(tree, STOP_GRACE_MS)
      console.log(`${way}: ${tree.size} processes gone ${Math.round(ms)} ms after SIGTERM`)
      // Gone is not yet read: the last lines may still be in the pipe.
      await node.closed
      expect(node.stdout, `stderr: ${node.stderr}`).toMatch(/^left$/m)
    })
  }

  it("SIGINT to the bin stops the node too: the bin's pid is Node's own, on Node's own TypeScript transform", async () => {
    const { node, tree, nodePid } = await startWay('bin')
    expect(node.pid).toBe(nodePid)
    // The workspace's Node 24 runs the sources itself (no tsx loader thread), and says nothing about it on stderr.
    // `phoenix node` caps V8's young generation and keeps its old generation's limit (bin/phoenix says why).
    expect(processInfo(nodePid)!.command).toMatch(/ --max-semi-space-size=16 --initial-old-space-size=128 --experimental-transform-types --disable-warning=ExperimentalWarning \S*bin\/phoenix\.js node /)
    process.kill(node.pid, 'SIGINT')
    await waitGone(tree, STOP_GRACE_MS)
    await node.closed
    expect(node.stdout).toMatch(/^left$/m)
    expect(node.stderr).not.toMatch(/Warning/)
  })

  it('the same signal twice at once (GNU timeout, kill -- -PGID) is one signal: the leave finishes', async () => {
    const { node, tree, nodePid } = await startWay('bin')
    // What `timeout` does: the signal to its child, then to its own process group. Sent back to
    // back the kernel merges the two into one pending signal, so the second goes once the node
    // has taken the first (its "leaving" line), well within SIGNAL_ECHO_MS.
    const firstAtMs = Date.now()
    process.kill(nodePid, 'SIGTERM')
    while (!/SIGTERM received; leaving/.test(node.stderr) && Date.now() - firstAtMs < SIGNAL_ECHO_MS) await sleep(2)
    process.kill(-node.pid, 'SIGTERM')
    expect(Date.now() - firstAtMs).toBeLessThan(SIGNAL_ECHO_MS)
    await waitGone(tree, STOP_GRACE_MS)
    await node.closed
    expect(node.stderr).not.toMatch(/second SIGTERM/)
    expect(node.stdout).toMatch(/^left$/m)
    expect(await node.exited).toBe(0)
  })

  it('SIGHUP (its terminal or SSH session closed) makes the node leave gracefully too', async () => {
    const { node, tree } = await startWay('bin')
    process.kill(node.pid, 'SIGHUP')
    await waitGone(tree, STOP_GRACE_MS)
    await node.closed
    // Node's default for SIGHUP was to die at once, without a leave.
    expect(node.stderr).toMatch(/^phoenix: SIGHUP received \(its terminal closed\); leaving$/m)
    expect(node.stdout).toMatch(/^left$/m)
  })

  it('a launcher that dies without passing anything on (SIGKILL to npx) takes the node with it', async () => {
    const { node, tree } = await startWay('npx')
    process.kill(node.pid, 'SIGKILL')
    await waitGone(tree, STOP_GRACE_MS)
    await node.closed
    expect(node.stderr).toMatch(/launcher pid \d+ .* exited; leaving/)
    expect(node.stdout).toMatch(/^left$/m)
  })
})

describe("bin/phoenix's Node flags", () => {
  it('gives `phoenix sim` a large young generation', async () => {
    // Large enough to run for a while: its command line is read while it runs.
    const sim = start(join(REPO, 'node_modules/.bin/phoenix'), ['sim', join(REPO, 'simulations/scenarios/paper-1-subnet.json'), '--nodes', '400'])
    running.push(sim)
    let command = ''
    for (let i = 0; i < 200 && !command.includes('phoenix.js sim'); i++) {
      command = processInfo(sim.pid)?.command ?? ''
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    expect(command).toMatch(/\/node --max-semi-space-size=128 --experimental-transform-types --disable-warning=ExperimentalWarning \S*bin\/phoenix\.js sim /)
    sim.killGroup() // it may have finished already
    await sim.closed
  })

  it('`phoenix sim` kept in its process (PHOENIX_SIM_HEAP_RAISED) warns before a run that may not fit in the heap limit, naming the option', async () => {
    // A 24 MiB old generation (and 1 MiB semi-spaces) cannot hold 300 processes' tables (~77 MiB
    // by the estimate): the warning comes before the run, which then may stop on the heap. (Without
    // the variable the command runs itself again with the heap raised: sim-heap.test.ts.)
    const env = { ...process.env, NODE_OPTIONS: '--max-old-space-size=24 --max-semi-space-size=1', PHOENIX_SIM_HEAP_RAISED: '1' }
    const sim = start(join(REPO, 'node_modules/.bin/phoenix'), ['sim', join(REPO, 'simulations/scenarios/paper-3-subnets.json'), '--nodes', '300'], env)
    running.push(sim)
    const [line] = await sim.waitFor(/^phoenix sim: 300 processes may need ~\d+ MiB of heap.*$/m)
    expect(line).toMatch(/more than V8's limit here \(\d+ MiB\); raise it with NODE_OPTIONS=--max-old-space-size=\d+ /)
    sim.killGroup()
    await sim.closed
  })

  it("keeps V8's old-generation limit at --initial-old-space-size=128 after collections, where V8 alone shrinks it", () => {
    // What `phoenix node` passes it for (bin/phoenix): without it V8 shrinks the initial limit
    // after the first collections toward twice a small live heap, and marking is scheduled again
    // as soon as a mark-compact ends. `--trace-gc-nvp` prints the limit after each collection.
    const limitsMiB = (flags: string[]): number[] => {
      const workload = 'const keep = []; for (let i = 0; i < 6; i++) { for (let j = 0; j < 200000; j++) keep.push({ j }); gc() }'
      const run = spawnSync(process.execPath, ['--max-semi-space-size=16', ...flags, '--expose-gc', '--trace-gc-nvp', '-e', workload], { encoding: 'utf8' })
      return [...run.stdout.matchAll(/old_gen_allocation_limit=(\d+)/g)].map((m) => Number(m[1]) / 2 ** 20)
    }
    const kept = limitsMiB(['--initial-old-space-size=128'])
    const shrunk = limitsMiB([])
    console.log(`old-generation limits, MiB: with the flag ${kept.map((x) => x.toFixed(0)).join(' ')}; without ${shrunk.map((x) => x.toFixed(0)).join(' ')}`)
    expect(kept.length).toBeGreaterThanOrEqual(6)
    expect(Math.min(...kept)).toBeGreaterThanOrEqual(128)
    expect(Math.min(...shrunk)).toBeLessThan(128)
  })

  it('leaves the young generation and the old generation\'s limit to NODE_OPTIONS when that sets a size', async () => {
    const socket = join(tempDir('proc'), 'control.sock')
    const node = start(join(REPO, 'node_modules/.bin/phoenix'), ['node', '--name', 'flags', '--control', socket], { ...process.env, NODE_OPTIONS: '--max-semi-space-size=32 --max-old-space-size=512' })
    running.push(node)
    await node.waitFor(/control endpoint on/)
    const command = processInfo(node.pid)!.command
    // Nothing between Node and its TypeScript flags: the sizes are NODE_OPTIONS' alone.
    expect(command).toMatch(/\/node --experimental-transform-types --disable-warning=ExperimentalWarning \S*bin\/phoenix\.js node /)
    expect(command).not.toContain('--max-semi-space-size')
    expect(command).not.toContain('--initial-old-space-size')
    process.kill(node.pid, 'SIGTERM')
    await node.closed
    expect(node.stdout).toMatch(/^left$/m)
  })
})
