/**
 * What Phoenix's own code adds at the two ends of a path, with no sockets, Yamux or Noise (the
 * ends' half of issue 19's latency: a bare libp2p stream's sender calls `stream.send` and its
 * receiver is handed the bytes by the stream's 'message' event, where Phoenix's sender encodes
 * and routes a frame, and its receiver decodes it and hands the application a message):
 * - send: from `phoenix.send(name, 64 B, { transfer: true })` to the neighbour stream's `send`
 *   (what a bare sender reaches at once);
 * - deliver: from a 64 B data frame handed to the node's inbound stream (a test double,
 *   `test/fake-node.ts`) to the application's `'message'` listener (what a bare receiver's
 *   listener is handed at once).
 * Timed back to back and after `--sleep-ms` asleep (the forwarding benchmark's latency probes
 * reach processes that slept 1-5 ms: bench/README.md, "Reading the numbers"), then each path's
 * time by step after a sleep (each step's entry and exit stamped by wrapping its method: the
 * wrappers add a little to every step).
 *
 *   node_modules/.bin/tsx packages/transport/bench/ends-path.ts [--frames 1000] [--sleep-ms 2]
 */
import { fail, scriptArgs } from '../../../tools/script-args.ts'
import { marks, median, pause, quantile, stamped } from './stamps.ts'
import { PhoenixCore } from '@phoenix-overlay/core'
import type { Frame } from '@phoenix-overlay/wire'
import { FakeNode, prefixed, settle } from '../test/fake-node.ts'
import { FlowCredits } from '../src/credit.ts'
import { DuplicateWindow } from '../src/duplicate-window.ts'
import { Router } from '../src/forwarding.ts'
import { FrameDecoder } from '../src/frame-decoder.ts'
import { Inbox } from '../src/inbox.ts'
import { NeighbourLink } from '../src/link.ts'
import { PhoenixNode } from '../src/service.ts'

const { values } = scriptArgs({ options: { frames: { type: 'string', default: '1000' }, 'sleep-ms': { type: 'string', default: '2' } } }, { summary: 'Phoenix\'s own code at a sender and at a receiver per 64 B message, back to back and after a sleep' })
const frames = Number(values.frames)
const sleepMs = Number(values['sleep-ms'])
if (!Number.isInteger(frames) || frames < 10) fail(`--frames must be an integer ≥ 10, got ${values.frames}`)
if (!Number.isFinite(sleepMs) || sleepMs <= 0) fail(`--sleep-ms must be a positive number, got ${values['sleep-ms']}`)
/** Messages run first in each series and not counted: V8 compiles the path meanwhile. */
const WARM_UP_FRAMES = 200
const PAYLOAD_BYTES = 64


/**
 * µs from `start(i)` to the stamp labelled `end`, per message; `after(i)` runs between messages,
 * untimed. `steps` collects the spans between consecutive stamps.
 */
async function series(start: (i: number) => void, end: string, asleep: boolean, after: (i: number) => void, steps?: Map<string, number[]>): Promise<number[]> {
  const samples: number[] = []
  for (let i = 0; i < WARM_UP_FRAMES + frames; i++) {
    await pause(asleep, sleepMs)
    marks.length = 0
    const began = performance.now()
    start(i)
    const ended = marks.find(([label]) => label === end)
    if (ended === undefined) throw new Error(`message ${i}: no "${end}" in the same turn`)
    after(i)
    if (i < WARM_UP_FRAMES) continue
    samples.push((ended[1] - began) * 1000)
    let previous = began
    for (const [label, at] of marks) {
      steps?.set(label, [...(steps.get(label) ?? []), (at - previous) * 1000])
      previous = at
      if (label === end) break
    }
  }
  return samples
}

const node = await FakeNode.create({ signRecords: false, names: ['here'], timing: { leaveLingerMaxMs: 0 } })
await node.node.start()
node.node.afterStart()
const neighbour = await node.connect()
// The neighbour claims the name the sends go to.
neighbour.stream.deliver(prefixed({ kind: 'update', update: { neighbourSlots: [], transSets: [], entries: [{ destination: neighbour.peer, seq: 2, nhops: 0, names: ['there'], addresses: [], trans: -1 }] } }))
await settle(20)
if (node.node.resolve('there') === undefined) throw new Error('the neighbour\'s name did not resolve')

// What the neighbour's stream is handed: stamped, recorded (for the credit returned below).
const written: Uint8Array[] = []
const send = neighbour.stream.send.bind(neighbour.stream)
neighbour.stream.send = (bytes) => {
  marks.push(['neighbour stream send', performance.now()])
  written.push(bytes instanceof Uint8Array ? bytes : bytes.subarray())
  return send(bytes)
}
// The neighbour returns each message's credit (as a next hop does once the frame left it): the flow never waits.
const creditBack = () => {
  for (const bytes of written.splice(0)) {
    let prefix = 1
    while ((bytes[prefix - 1]! & 0x80) !== 0) prefix++
    if (bytes[prefix] !== 0x12) continue // not a data frame (credit, probe)
    neighbour.stream.deliver(prefixed({ kind: 'credit', credit: { flows: [{ source: node.node.id, destination: neighbour.peer, bytes: bytes.byteLength - prefix }] } }))
  }
}
const payload = new Uint8Array(PAYLOAD_BYTES)
const sendOne = () => void node.node.send('there', payload, { transfer: true })

node.node.addEventListener('message', () => marks.push(['message listener', performance.now()]))
const incoming = (i: number) => prefixed({ kind: 'data', data: { source: neighbour.peer, destination: node.node.id, name: 'here', hopLimit: 15, messageId: 1 + i, ackRequested: false, payload: new Uint8Array(PAYLOAD_BYTES) } } as Frame)
let framesIn: Uint8Array[] = []
const deliverOne = (i: number) => neighbour.stream.deliver(framesIn[i]!)
let nextId = 0
/** A fresh series of incoming frames, message ids never used before (a repeated id is a duplicate, not delivered). */
const prepare = () => (framesIn = Array.from({ length: WARM_UP_FRAMES + frames }, () => incoming(nextId++)))

const rows: string[] = []
for (const asleep of [false, true]) {
  const sends = await series(sendOne, 'neighbour stream send', asleep, creditBack)
  prepare()
  const deliveries = await series(deliverOne, 'message listener', asleep, () => written.splice(0))
  const mode = asleep ? `after ${sleepMs} ms asleep` : 'back to back'
  rows.push(`| ${mode} | ${median(sends).toFixed(1)} / ${quantile(sends, 0.9).toFixed(1)} | ${median(deliveries).toFixed(1)} / ${quantile(deliveries, 0.9).toFixed(1)} |`)
}
console.log(`${frames} messages of ${PAYLOAD_BYTES} B per series (after ${WARM_UP_FRAMES} not counted); µs, median / p90\n`)
console.log('| | send: `send(…, { transfer: true })` to the stream\'s `send` | deliver: the stream\'s delivery to the `\'message\'` listener |\n|---|---|---|')
console.log(rows.join('\n'))

stamped(PhoenixNode.prototype as never, 'send', 'node send')
stamped(Router.prototype as never, 'routeData', 'router routeData')
stamped(PhoenixCore.prototype as never, 'forward', 'core forward')
stamped(FlowCredits.prototype as never, 'submit', 'credit submit')
stamped(NeighbourLink.prototype as never, 'send', 'link send')
stamped(FrameDecoder.prototype as never, 'decode', 'frame decoder')
stamped(FrameDecoder.prototype as never, 'onlyFrame', 'frame decoder (one frame)')
stamped(Router.prototype as never, 'onFrame', 'router onFrame')
stamped(Router.prototype as never, 'onData', 'router onData')
stamped(Inbox.prototype as never, 'accept', 'inbox accept')
stamped(DuplicateWindow.prototype as never, 'has', 'duplicate has')
stamped(DuplicateWindow.prototype as never, 'remember', 'duplicate remember')
for (const [what, run, end, after] of [['send', sendOne, 'neighbour stream send', creditBack], ['deliver', deliverOne, 'message listener', () => written.splice(0)]] as const) {
  const steps = new Map<string, number[]>()
  if (what === 'deliver') prepare()
  await series(run, end, true, after, steps)
  console.log(`\n${what}, after ${sleepMs} ms asleep, by step (stamps at each step's entry and exit, in order): median µs since the previous stamp\n`)
  console.log('| stamp | µs |\n|---|---|')
  for (const [label, spans] of steps) console.log(`| ${label} | ${median(spans).toFixed(1)} |`)
}
await node.node.stop()
process.exit(0)
