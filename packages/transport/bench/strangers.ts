/**
 * Strangers cost little (issue 14): plain TCP clients that never complete a handshake send a
 * node garbage. One Phoenix node in a private network (a child process, `member-node.ts`); then
 * `--connections` TCP connections, `--parallel` at a time, each writing `--bytes` random bytes and
 * closing. The node's RSS is sampled before, during (the largest sample, every 100 ms) and
 * `--settle-ms` after the last connection closed. Then `--silent` connections open at once and
 * send nothing: how many the node holds (handshakes in progress) and how long. Last, the node
 * must still route: a member joins and resolves its name.
 *
 *   npx tsx packages/transport/bench/strangers.ts [--connections 200] [--parallel 20] [--bytes 1048576] [--settle-ms 10000] [--silent 300]
 */
import { randomBytes } from 'node:crypto'
import { connect } from 'node:net'
import { scriptArgs } from '../../../tools/script-args.ts'
import { generateKey } from '@libp2p/pnet'
import { MemberProcess, MiB, mib } from './member-process.ts'

export interface StrangersOptions {
  connections: number
  parallel: number
  bytes: number
  settleMs: number
  /** Connections opened at once that send nothing (the handshake limit and timeout). */
  silent: number
  basePort: number
}

export interface StrangersResult {
  rss: { before: number; duringMax: number; after: number }
  /** `silent` connections opened at once that send nothing: how many the node still held open after a second, and when the last closed. */
  silent: { opened: number; resetBeforeOpen: number; otherErrors: number; heldAfter3s: number; lastClosedAfterMs: number }
  /** Connections the node closed before the client had written everything. */
  cutShort: number
  /** A member that joined afterwards resolved the node's name. */
  stillRouting: boolean
  elapsedMs: number
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** One stranger: connects, writes `bytes` random bytes and keeps the connection open until the node closes it (or 30 s). */
function stranger(port: number, bytes: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port })
    const payload = randomBytes(bytes)
    let cut = false
    const done = () => {
      clearTimeout(timer)
      socket.destroy()
      resolve(cut)
    }
    const timer = setTimeout(done, 30_000)
    socket.on('error', () => {
      cut = true
      done()
    })
    socket.on('close', done)
    socket.on('data', () => undefined)
    socket.on('connect', () => {
      socket.write(payload)
    })
  })
}

/** Opens `count` connections at once that send nothing; counts how many are still open after 3 s, and when the last one closed. */
async function silentStrangers(port: number, count: number): Promise<StrangersResult['silent']> {
  const started = Date.now()
  let opened = 0
  // A connection the node accepts and aborts at once (over handshakesInProgressMax) can be reset
  // before this process's event loop sees it connected: Node then reports ECONNRESET instead of
  // 'connect'. It reached the node all the same; only other errors mean it did not.
  let resetBeforeOpen = 0
  let otherErrors = 0
  let openNow = 0
  let lastClosedAfterMs = 0
  const closed = Array.from({ length: count }, () => new Promise<void>((resolve) => {
    const socket = connect({ host: '127.0.0.1', port })
    let connected = false
    socket.on('connect', () => {
      connected = true
      opened++
      openNow++
    })
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (connected) return
      if (error.code === 'ECONNRESET' || error.code === 'EPIPE') resetBeforeOpen++
      else otherErrors++
    })
    socket.on('close', () => {
      if (connected) openNow--
      lastClosedAfterMs = Date.now() - started
      resolve()
    })
    setTimeout(() => socket.destroy(), 60_000).unref()
  }))
  // 3 s, not 1: the node refuses the excess at once, but in a loaded test run (the whole suite on
  // 2 cores) this process heard of those resets more than a second later (300 still open at 1 s
  // in one run); a node without the bound holds them all until strangerSilenceMs (5 s).
  await sleep(3_000)
  const heldAfter3s = openNow
  await Promise.all(closed)
  return { opened, resetBeforeOpen, otherErrors, heldAfter3s, lastClosedAfterMs }
}

export async function runStrangers(options: StrangersOptions): Promise<StrangersResult> {
  const key = new Uint8Array(95)
  generateKey(key)
  const psk = Buffer.from(key).toString('hex')
  const node = new MemberProcess('node', { role: 'node', port: options.basePort, psk, names: ['target'] })
  let member: MemberProcess | undefined
  try {
    const address = (await node.line(/^ready /)).slice(6)
    await sleep(1_000)
    const before = await node.rss()
    let duringMax = before
    let sampling = true
    const sampler = (async () => {
      while (sampling) {
        duringMax = Math.max(duringMax, await node.rss())
        await sleep(100)
      }
    })()
    const started = Date.now()
    let next = 0
    let cutShort = 0
    const worker = async () => {
      while (next < options.connections) {
        next++
        if (await stranger(options.basePort, options.bytes)) cutShort++
      }
    }
    await Promise.all(Array.from({ length: options.parallel }, worker))
    const elapsedMs = Date.now() - started
    await sleep(options.settleMs)
    sampling = false
    await sampler
    const after = await node.rss()
    const silent = await silentStrangers(options.basePort, options.silent)
    member = new MemberProcess('member', { role: 'node', port: options.basePort + 1, psk, hubs: [address], names: ['member'], watch: ['target'] })
    await member.line(/^ready /)
    let stillRouting = false
    for (let i = 0; i < 80 && !stillRouting; i++) {
      stillRouting = (await member.state()).resolved.target !== null
      if (!stillRouting) await sleep(250)
    }
    return { rss: { before, duringMax, after }, silent, cutShort, stillRouting, elapsedMs }
  } finally {
    await Promise.all([node.kill(), member?.kill()])
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = scriptArgs({
    options: {
      connections: { type: 'string', default: '200' },
      parallel: { type: 'string', default: '20' },
      bytes: { type: 'string', default: String(MiB) },
      'settle-ms': { type: 'string', default: '10000' },
      silent: { type: 'string', default: '300' },
      port: { type: 'string', default: String(44000 + (process.pid % 500) * 4) },
    },
  }, { summary: 'strangers cost little: TCP clients that never complete a handshake' })
  const r = await runStrangers({ connections: Number(values.connections), parallel: Number(values.parallel), bytes: Number(values.bytes), settleMs: Number(values['settle-ms']), silent: Number(values.silent), basePort: Number(values.port) })
  console.log(`${values.connections} plain TCP connections, ${values.parallel} at a time, ${mib(Number(values.bytes))} of random bytes each, in ${(r.elapsedMs / 1000).toFixed(1)} s (${r.cutShort} cut short by the node)`)
  console.log(`  RSS of the node: before ${mib(r.rss.before)}, during (max) ${mib(r.rss.duringMax)}, ${Number(values['settle-ms']) / 1000} s after ${mib(r.rss.after)} (after - before: ${mib(r.rss.after - r.rss.before)})`)
  console.log(`${r.silent.opened + r.silent.resetBeforeOpen} silent connections at once (${r.silent.resetBeforeOpen} reset by the node before they were seen open, ${r.silent.otherErrors} other errors): ${r.silent.heldAfter3s} still open after 3 s, the last closed after ${(r.silent.lastClosedAfterMs / 1000).toFixed(1)} s`)
  console.log(`  a member joining afterwards resolves the node's name: ${r.stillRouting}`)
}
