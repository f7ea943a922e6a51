/**
 * One worker of the example job: a Phoenix node named `worker/<n>` that joins through the hub it
 * is given, prints `ready <peer id>` once up, then `got <seq>` for every message (synchronously,
 * before the message handler returns), and leaves gracefully on SIGTERM.
 *
 *   tsx worker.ts --name worker/0 --hub /ip4/127.0.0.1/tcp/4001/p2p/12D3… --key <hex protobuf key>
 */
import { fail, scriptArgs } from '../../tools/script-args.ts'
import { generateKeyPair, privateKeyFromProtobuf } from '@libp2p/crypto/keys'
import { createPhoenixLibp2p } from '@phoenix-overlay/transport'

const { values } = scriptArgs({
  options: {
    name: { type: 'string' },
    hub: { type: 'string' },
    key: { type: 'string' },
  },
}, { summary: 'one worker of job.ts (started by it)', help: { name: 'its logical name (required)', hub: 'the coordinator\'s address (required)', key: 'its private key, protobuf in hex (a restarted worker keeps its identity)' } })
if (values.name === undefined || values.hub === undefined) fail('--name and --hub are required')
const privateKey = values.key !== undefined ? privateKeyFromProtobuf(Buffer.from(values.key, 'hex')) : await generateKeyPair('Ed25519')
const { libp2p, phoenix } = await createPhoenixLibp2p({ listen: ['/ip4/127.0.0.1/tcp/0'], hubs: [values.hub], names: [values.name], privateKey })
const decoder = new TextDecoder()
phoenix.addEventListener('message', ({ detail: { payload } }) => {
  // A pipe's write is synchronous on Linux: the line is out before the handler returns.
  process.stdout.write(`got ${decoder.decode(payload)}\n`)
})
process.stdout.write(`ready ${libp2p.peerId.toString()}\n`)
process.once('SIGTERM', () => {
  void Promise.resolve(libp2p.stop()).then(() => process.exit(0))
})
