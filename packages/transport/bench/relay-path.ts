/**
 * What a relay's own code adds to one forwarded frame, with no sockets, Yamux or Noise: a 64 B
 * data frame handed to a relay node's inbound stream (a test double, `test/fake-node.ts`) until
 * the relay hands it to the next hop's stream, against a pipe (the 'message' listener writes the
 * bytes to the other stream, what a pipe relay's own code does). Timed back to back and after
 * `--sleep-ms` asleep, since the forwarding benchmark's latency probes reach processes that slept
 * 1-5 ms (bench/README.md, "Reading the numbers"), then the relay's time by step after a sleep
 * (each step's entry and exit stamped by wrapping its method: the wrappers add a little to every
 * step, the same after a sleep as back to back).
 *
 *   node_modules/.bin/tsx packages/transport/bench/relay-path.ts [--frames 1000] [--sleep-ms 2]
 */
import { fail, scriptArgs } from '../../../tools/script-args.ts'
import { marks, median, pause, quantile, stamped } from './stamps.ts'
import { PhoenixCore } from '@phoenix-overlay/core'
import type { Frame } from '@phoenix-overlay/wire'
import { FakeNode, FakeStream, prefixed, settle } from '../test/fake-node.ts'
import { FlowCredits } from '../src/credit.ts'
import { Router } from '../src/forwarding.ts'
import { FrameDecoder } from '../src/frame-decoder.ts'
import { NeighbourLink } from '../src/link.ts'

const { values } = scriptArgs({ options: { frames: { type: 'string', default: '1000' }, 'sleep-ms': { type: 'string', default: '2' } } }, { summary: 'a relay\'s own code per forwarded frame, back to back and after a sleep, against a pipe' })
const frames = Number(values.frames)
const sleepMs = Number(values['sleep-ms'])
if (!Number.isInteger(frames) || frames < 10) fail(`--frames must be an integer ≥ 10, got ${values.frames}`)
if (!Number.isFinite(sleepMs) || sleepMs <= 0) fail(`--sleep-ms must be a positive number, got ${values['sleep-ms']}`)
/** Frames run first in each series and not counted: V8 compiles the path meanwhile. */
const WARM_UP_FRAMES = 200


/** µs from handing `deliver` the bytes to the next stream's `send`, per frame. */
async function series(from: FakeStream, to: FakeStream, bytesOf: (i: number) => Uint8Array, asleep: boolean, steps?: Map<string, number[]>, after: (bytes: Uint8Array) => void = () => {}): Promise<number[]> {
  let handed = 0
  const send = to.send.bind(to)
  to.send = (bytes) => {
    marks.push(['next stream send', performance.now()])
    return send(bytes)
  }
  const samples: number[] = []
  for (let i = 0; i < WARM_UP_FRAMES + frames; i++) {
    const bytes = bytesOf(i)
    await pause(asleep, sleepMs)
    to.written.length = 0
    marks.length = 0
    handed = performance.now()
    from.deliver(bytes)
    // A frame queued behind another write of this pass of the event loop (a probe, an update to
    // the next hop) goes in the check phase (link.ts, flush): counted as it is, a later write.
    let sent = marks.find(([label]) => label === 'next stream send')
    if (sent === undefined) await new Promise((resolve) => setImmediate(resolve))
    sent = marks.find(([label]) => label === 'next stream send')
    if (sent === undefined) throw new Error(`frame ${i} was not written on by the check phase after its delivery`)
    after(bytes)
    if (i < WARM_UP_FRAMES) continue
    samples.push((sent[1] - handed) * 1000)
    let previous = handed
    for (const [label, at] of marks) {
      steps?.set(label, [...(steps.get(label) ?? []), (at - previous) * 1000])
      previous = at
    }
  }
  to.send = send
  return samples
}

const pipeFrom = new FakeStream()
const pipeTo = new FakeStream()
pipeFrom.addEventListener('message', (event) => void pipeTo.send(event.data!))
const raw = (i: number) => Uint8Array.from({ length: 80 }, (_, k) => (i + k) & 0xff)

// The pipe first: the relay's fake neighbours answer no liveness probe, so it must not sit idle for seconds.
const pipe = new Map<boolean, number[]>()
for (const asleep of [false, true]) pipe.set(asleep, await series(pipeFrom, pipeTo, raw, asleep))

const relay = await FakeNode.create({ signRecords: false, timing: { leaveLingerMaxMs: 0 } })
await relay.node.start()
relay.node.afterStart()
// Encrypted connections, as Noise's: the relay rewrites the hop limit in the bytes it read (zero-copy), as a real one does.
const source = await relay.connect({ encrypted: true })
const next = await relay.connect({ encrypted: true })
await settle(20)
// The next hop returns each frame's credit, as a real one does when the frame leaves it (between
// two measured frames): the flow never waits, and the link is never silent (liveness).
const creditBack = (bytes: Uint8Array) => next.stream.deliver(prefixed({ kind: 'credit', credit: { flows: [{ source: source.peer, destination: next.peer, bytes: bytes.byteLength - 2 }] } }))
const dataFrame = (i: number) => prefixed({ kind: 'data', data: { source: source.peer, destination: next.peer, name: '', hopLimit: 8, messageId: 1 + i, ackRequested: false, payload: new Uint8Array(64) } } as Frame)

const rows: string[] = []
for (const asleep of [false, true]) {
  const piped = pipe.get(asleep)!
  const phoenix = await series(source.stream, next.stream, dataFrame, asleep, undefined, creditBack)
  const mode = asleep ? `after ${sleepMs} ms asleep` : 'back to back'
  rows.push(`| ${mode} | ${median(piped).toFixed(1)} / ${quantile(piped, 0.9).toFixed(1)} | ${median(phoenix).toFixed(1)} / ${quantile(phoenix, 0.9).toFixed(1)} |`)
}
console.log(`${frames} frames of 64 B per series (after ${WARM_UP_FRAMES} not counted); µs from the inbound stream's delivery to the next stream's send, median / p90\n`)
console.log('| | pipe (listener writes the bytes on) | Phoenix relay |\n|---|---|---|')
console.log(rows.join('\n'))

stamped(FrameDecoder.prototype as never, 'decode', 'frame decoder')
stamped(Router.prototype as never, 'onData', 'router onData')
stamped(PhoenixCore.prototype as never, 'forward', 'core forward')
stamped(FlowCredits.prototype as never, 'submit', 'credit submit')
stamped(NeighbourLink.prototype as never, 'send', 'link send')
stamped(FrameDecoder.prototype as never, 'onlyFrame', 'frame decoder (one frame)')
stamped(Router.prototype as never, 'onFrame', 'router onFrame')
const steps = new Map<string, number[]>()
await series(source.stream, next.stream, dataFrame, true, steps, creditBack)
console.log(`\nThe Phoenix relay after ${sleepMs} ms asleep, by step (stamps at each step's entry and exit, in order): median µs since the previous stamp\n`)
console.log('| stamp | µs |\n|---|---|')
for (const [label, spans] of steps) console.log(`| ${label} | ${median(spans).toFixed(1)} |`)
await relay.node.stop()
process.exit(0)
