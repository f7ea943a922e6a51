/**
 * The link's frame decoder against libp2p's `LengthPrefixedDecoder`, in one run: `--frames`
 * deliveries of one `--bytes`-byte frame each (what a relay sees for small messages), 5 reps
 * alternating between the two; CPU µs per delivery, median of the reps, and the ratio. libp2p's
 * decoder ends every delivery by catching a RangeError from the varint reader (src/frame-decoder.ts).
 *
 *   node_modules/.bin/tsx packages/transport/bench/frame-decoder.ts [--frames 200000] [--bytes 180]
 */
import { LengthPrefixedDecoder } from '@libp2p/utils'
import { fail, scriptArgs } from '../../../tools/script-args.ts'
import * as varint from 'uint8-varint'
import { FrameDecoder } from '../src/frame-decoder.ts'

const { values } = scriptArgs({ options: { frames: { type: 'string', default: '200000' }, bytes: { type: 'string', default: '180' } } }, { summary: 'the link\'s frame decoder against libp2p\'s LengthPrefixedDecoder' })
const frames = Number(values.frames)
const bytes = Number(values.bytes)
if (!Number.isInteger(frames) || frames < 1) fail(`--frames must be a positive integer, got ${values.frames}`)
if (!Number.isInteger(bytes) || bytes < 1) fail(`--bytes must be a positive integer, got ${values.bytes}`)
const delivery = Uint8Array.from([...varint.encode(bytes), ...new Uint8Array(bytes)])
const LIMIT = 16 * 1024 * 1024

function cpuUsPerDelivery(decode: (data: Uint8Array) => Iterable<unknown>): number {
  const start = process.cpuUsage()
  let seen = 0
  for (let i = 0; i < frames; i++) for (const _ of decode(delivery)) seen++
  const used = process.cpuUsage(start)
  if (seen !== frames) throw new Error(`decoded ${seen} frames of ${frames}`)
  return (used.user + used.system) / frames
}

const ours: number[] = []
const theirs: number[] = []
for (let rep = 0; rep < 5; rep++) {
  const a = new FrameDecoder(LIMIT, LIMIT)
  const b = new LengthPrefixedDecoder({ maxDataLength: LIMIT, maxBufferSize: LIMIT })
  ours.push(cpuUsPerDelivery((d) => a.decode(d)))
  theirs.push(cpuUsPerDelivery((d) => b.decode(d)))
}
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!
console.log(`${frames} deliveries of one ${bytes}-byte frame, CPU µs per delivery (median of 5 alternating reps):`)
console.log(`  FrameDecoder (src/frame-decoder.ts):   ${median(ours).toFixed(2)}  [${ours.map((x) => x.toFixed(2)).join(' ')}]`)
console.log(`  LengthPrefixedDecoder (@libp2p/utils): ${median(theirs).toFixed(2)}  [${theirs.map((x) => x.toFixed(2)).join(' ')}]`)
console.log(`  ratio: ${(median(theirs) / median(ours)).toFixed(1)}x`)
