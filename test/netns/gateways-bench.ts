/**
 * Several gateways per site, measured in namespaces (gateways-run.ts): goodput of 8 flows with two
 * gateways per site against one (the same run), and the failover when a gateway is killed.
 *
 *   sudo node_modules/.bin/tsx test/netns/gateways-bench.ts                 # 8 Mbit/s per WAN link, 2 hosts per site, 10 s phases
 *   sudo node_modules/.bin/tsx test/netns/gateways-bench.ts --rate 16 --hosts 4 --window 4 --ack-timeout 1.5 --phase 10
 *
 * Figures and what they mean: test/netns/SITES.md, "The measurements", items 3 and 4.
 *
 * The per-flow split is rendezvous hashing over fixed ids (keys from fixed seeds): with the
 * default shape it is 4/4 at both sites (printed: frames per gateway). Each flow holds at most
 * `--window` messages, so a gateway given fewer flows (with `--hosts 4`: 5/3 or 6/2) can be
 * window-limited below its link rate. At 16 Mbit/s per link, 12 node processes (Noise, yamux,
 * three overlay hops per message) share the machine's cores: CPU, not tc, can then be the limit.
 *
 * Needs root (namespaces, nftables, tc). Goal (issue "Real sites"): ratio >= 1.7; each failover
 * resumes within 3 s; 0 acknowledged messages lost; every other send refused with a code.
 */
import { fail, scriptArgs } from '../../tools/script-args.ts'
import { runGateways } from './gateways-run.ts'
import { cleanUpOnSignals } from './signal-cleanup.ts'

const { values } = scriptArgs(
  { options: { rate: { type: 'string', default: '8' }, phase: { type: 'string', default: '10' }, hosts: { type: 'string', default: '2' }, window: { type: 'string', default: '4' }, 'ack-timeout': { type: 'string', default: '1.5' } } },
  {
    summary: 'several gateways per site in namespaces: goodput with two gateways per site against one, and failover (needs root)',
    help: { rate: 'Mbit/s of each gateway WAN link (tc)', phase: 'seconds per phase', hosts: 'hosts per site', window: 'messages in flight per flow', 'ack-timeout': 'seconds before an unacknowledged message counts as lost' },
  },
)
cleanUpOnSignals()

function option(name: keyof typeof values): number {
  const raw = values[name] as string
  const value = Number(raw)
  if (!Number.isFinite(value) || value <= 0) fail(`--${name}: a positive number, got ${JSON.stringify(raw)}`)
  return value
}

const rateMbit = option('rate')
const phaseMs = option('phase') * 1000
const hosts = option('hosts')
const window = option('window')
const ackTimeoutMs = option('ack-timeout') * 1000
const report = await runGateways({ rateMbit, phaseMs, hosts, payloadBytes: 32 * 1024, window, ackTimeoutMs, prefix: `gwb${process.pid % 10000}-`, log: (line) => console.error(line) })
console.log(`tc ${rateMbit} Mbit/s per gateway WAN link, 8 flows (${hosts} A hosts -> 8 names on ${hosts} B hosts), 32 KiB messages, acknowledged (${window} in flight per flow, ack timeout ${ackTimeoutMs} ms), ${phaseMs / 1000} s phases`)
console.log(`goodput with 2 gateways per site: ${report.twoGatewaysMbit.toFixed(1)} Mbit/s; with 1: ${report.oneGatewayMbit.toFixed(1)} Mbit/s; ratio ${report.ratio.toFixed(2)} (goal >= 1.7)`)
console.log(`data frames forwarded per gateway in phase 1: ${Object.entries(report.forwardedPhase1).map(([g, n]) => `${g} ${n}`).join(', ')}`)
for (const f of report.failovers) console.log(`kill ${f.killed}: ${f.flowsCut} flows had a message or ack lost in it; every flow resumed (first message sent after the kill arrived) within ${f.resumeMs} ms (goal < 3000)`)
console.log(`sends ${report.sends}, acknowledged ${report.acked}, acknowledged but lost ${report.ackedLost} (goal 0); refused with a code: ${JSON.stringify(report.refused)}; arrivals out of order within a flow: ${report.outOfOrder}`)
