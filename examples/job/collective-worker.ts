/**
 * One worker of the collective job (collective-job.ts): a Phoenix node named `worker/<n>` in site
 * `--site`. For each work item the master broadcasts (`{ tag, n, members }`), it sums the squares
 * of its share of 1..n (every `members.length`-th number, from its index in `members`) and
 * contributes `[sum, 1]` for the master's reduce. Prints `ready <peer id>`, then `did <tag>`;
 * leaves gracefully on SIGTERM.
 *
 *   tsx collective-worker.ts --name worker/0 --site s1 --hub /ip4/127.0.0.1/tcp/4001/p2p/12D3… [--delay-ms 200]
 */
import { fail, intOption, scriptArgs } from '../../tools/script-args.ts'
import { createPhoenixLibp2p, float64Bytes } from '@phoenix-overlay/transport'

const { values } = scriptArgs({ options: { name: { type: 'string' }, site: { type: 'string' }, hub: { type: 'string' }, 'delay-ms': { type: 'string', default: '0' } } }, {
  summary: 'one worker of collective-job.ts (started by it)',
  help: { name: 'its logical name (required)', site: 'its site label (required)', hub: 'the master\'s address (required)', 'delay-ms': 'wait before contributing' },
})
if (values.name === undefined || values.hub === undefined || values.site === undefined) fail('--name, --site and --hub are required')
const name = values.name
const delayMs = intOption(values, 'delay-ms', 0)
const { libp2p, phoenix } = await createPhoenixLibp2p({ listen: ['/ip4/127.0.0.1/tcp/0'], hubs: [values.hub], names: [name], site: values.site })

/** The sum of squares of the numbers in 1..n this worker owns: i with (i - 1) % count === index. */
function shareOfSquares(n: number, index: number, count: number): number {
  let sum = 0
  for (let i = index + 1; i <= n; i += count) sum += i * i
  return sum
}

phoenix.addEventListener('message', (event) => {
  const work = JSON.parse(new TextDecoder().decode(event.detail.payload)) as { tag: string; n: number; members: string[] }
  const index = work.members.indexOf(name)
  if (index < 0) return
  const sum = shareOfSquares(work.n, index, work.members.length)
  setTimeout(() => {
    phoenix.contribute(name, work.tag, float64Bytes([sum, 1]))
    process.stdout.write(`did ${work.tag}\n`)
  }, delayMs)
})
process.stdout.write(`ready ${libp2p.peerId.toString()}\n`)
process.once('SIGTERM', () => void Promise.resolve(libp2p.stop()).then(() => process.exit(0)))
