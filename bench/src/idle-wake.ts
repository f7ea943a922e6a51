/**
 * What an idle gap does to the next piece of work, on this machine: the same small, warm
 * workload (an AEAD encryption of 100 bytes, as Noise does per message, and 200 lookups in a
 * Map, as routing does) timed back to back, and then once per wake-up after the process slept
 * 1, 2, 5 and 10 ms on a timer. The latency probes of `run forwarding` wait 1-5 ms between
 * probes, so every process on a path runs its code after such a gap: a hop's added latency
 * there scales with the code and memory it touches, not with its CPU time when warm
 * (bench/README.md, "Reading the numbers").
 *
 *   npx -y pnpm@10 --filter @phoenix-overlay/bench run idle-wake [-- --wakes 400]
 *
 * Prints a markdown table; writes nothing.
 */
import { createCipheriv, randomBytes } from 'node:crypto'
import { fail, scriptArgs } from '../../tools/script-args.ts'

const { values } = scriptArgs({ options: { wakes: { type: 'string', default: '400' } } }, { summary: 'a warm workload timed back to back and after idle gaps' })
const wakes = Number(values.wakes)
if (!Number.isInteger(wakes) || wakes < 10) fail(`--wakes must be an integer ≥ 10, got ${JSON.stringify(values.wakes)}`)

const key = randomBytes(32)
const plaintext = randomBytes(100)
const table = new Map(Array.from({ length: 1000 }, (_, i) => [`peer-${i}`, { hops: i % 7, next: `peer-${(i * 31) % 1000}` }]))
let sink = 0
function work(round: number): void {
  const cipher = createCipheriv('chacha20-poly1305', key, randomBytes(12), { authTagLength: 16 })
  sink += cipher.update(plaintext).byteLength + cipher.final().byteLength + cipher.getAuthTag().byteLength
  for (let i = 0; i < 200; i++) sink += table.get(`peer-${(round + i * 7) % 1000}`)!.hops
}
const timeUs = (round: number): number => {
  const start = process.hrtime.bigint()
  work(round)
  return Number(process.hrtime.bigint() - start) / 1000
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!
const p90 = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)]!

for (let i = 0; i < 20_000; i++) work(i) // warm: optimized code, caches full
const backToBack = Array.from({ length: wakes }, (_, i) => timeUs(i))
const rows: [string, number[]][] = [['back to back', backToBack]]
for (const gapMs of [1, 2, 5, 10]) {
  const samples: number[] = []
  for (let i = 0; i < wakes; i++) {
    await new Promise((resolve) => setTimeout(resolve, gapMs))
    samples.push(timeUs(i))
  }
  rows.push([`after ${gapMs} ms asleep`, samples])
}
const base = median(backToBack)
console.log(`| the same work (${wakes} times) | median µs | p90 µs | × back to back |\n|---|---|---|---|`)
for (const [label, samples] of rows) console.log(`| ${label} | ${median(samples).toFixed(1)} | ${p90(samples).toFixed(1)} | ${(median(samples) / base).toFixed(1)} |`)
if (sink === 0) console.log('') // keeps the work from being optimized away
