/**
 * What signing and verifying origin records costs on this machine, measured the way the
 * transport does it: Ed25519 through @libp2p/crypto, the verifying key recovered from the node id
 * (peer id) on every check. The simulator models convergence with these constants
 * (`processing.perRecordSignUs` / `perRecordVerifyUs`, see simulations/ANALYSIS.md).
 *
 *   npx tsx packages/transport/bench/records.ts [--ops 20000]
 */
import { fail, scriptArgs } from '../../../tools/script-args.ts'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey, peerIdFromString } from '@libp2p/peer-id'
import { recordPayload } from '@phoenix-overlay/core'

const { values } = scriptArgs({ options: { ops: { type: 'string', default: '20000' } } }, { summary: 'what signing and verifying origin records costs on this machine' })
const ops = Number(values.ops)
if (!Number.isInteger(ops) || ops < 100) fail(`--ops must be an integer of at least 100, got ${values.ops}`)

const keys = await Promise.all(Array.from({ length: 64 }, () => generateKeyPair('Ed25519')))
const ids = keys.map((key) => peerIdFromPrivateKey(key).toString())
// A typical record: two names and two multiaddrs with the peer id.
const payloads = ids.map((id, i) => recordPayload(id, 2 * i, [`worker-${i}`, `job-7/rank-${i}`], [`/ip4/10.0.${i}.5/tcp/7000/p2p/${id}`, `/ip6/fd00::${i}/tcp/7000/p2p/${id}`]))
const signatures = keys.map((key, i) => key.sign(payloads[i]!) as Uint8Array)

/** Median over 5 batches of `ops` operations, in microseconds per operation. */
function measure(label: string, op: (i: number) => unknown): number {
  const perOpUs: number[] = []
  for (let batch = 0; batch < 5; batch++) {
    const start = process.hrtime.bigint()
    for (let i = 0; i < ops; i++) op(i % keys.length)
    perOpUs.push(Number(process.hrtime.bigint() - start) / 1000 / ops)
  }
  perOpUs.sort((a, b) => a - b)
  const median = perOpUs[2]!
  console.log(`${label.padEnd(58)} ${median.toFixed(1).padStart(7)} µs/op  (batches ${perOpUs.map((x) => x.toFixed(1)).join(', ')})`)
  return median
}

console.log(`Ed25519 via @libp2p/crypto, ${ops} operations per batch, Node ${process.versions.node}`)
const signUs = measure('sign a record', (i) => keys[i]!.sign(payloads[i]!))
const verifyUs = measure('verify, key recovered from the peer id (what the node does)', (i) => {
  if (peerIdFromString(ids[i]!).publicKey?.verify(payloads[i]!, signatures[i]!) !== true) throw new Error('a valid signature failed to verify')
})
const publicKeys = keys.map((key) => key.publicKey)
const cachedUs = measure('verify, key already parsed', (i) => publicKeys[i]!.verify(payloads[i]!, signatures[i]!))
const payloadUs = measure('build the payload to sign or check (core, pure)', (i) => recordPayload(ids[i]!, 2 * i, ['a', 'b'], ['/ip4/10.0.0.1/tcp/7000']))
console.log(JSON.stringify({ signUs: round(signUs), verifyUs: round(verifyUs), verifyParsedKeyUs: round(cachedUs), payloadUs: round(payloadUs) }))

function round(x: number): number {
  return Math.round(x * 10) / 10
}
