/**
 * How soon a restarted hub is reachable again: one hub in a child process, `--nodes` nodes in
 * this process that know only the hub and meet each other through it (so each has neighbours
 * besides the hub). The hub is killed with SIGKILL, stays down `--down-s` seconds, and is
 * restarted with the same key and port; the time until every node has it as a neighbour again
 * and resolves its name is measured from the moment the new hub process listens.
 *
 *   npx tsx packages/transport/bench/hub-restart.ts [--down-s 150] [--nodes 3]
 */
import { generateKeyPair, privateKeyToProtobuf } from '@libp2p/crypto/keys'
import { fail, scriptArgs } from '../../../tools/script-args.ts'
import { createPhoenixLibp2p } from '../src/index.ts'
import { ChildNode, sleep, timeUntil } from '../test/processes.ts'

const { values } = scriptArgs({ options: { 'down-s': { type: 'string', default: '150' }, nodes: { type: 'string', default: '3' } } }, { summary: 'how soon a restarted hub is reachable again' })
const downMs = Number(values['down-s']) * 1_000
const count = Number(values.nodes)
if (!(downMs >= 0) || !(count >= 2)) fail('--down-s must be a number of seconds and --nodes at least 2')

const keyHex = Buffer.from(privateKeyToProtobuf(await generateKeyPair('Ed25519'))).toString('hex')
const hubListen = `/ip4/127.0.0.1/tcp/${46000 + (process.pid % 1_000)}`
let hub = new ChildNode({ listen: hubListen, keyHex, names: ['hub'] })
await hub.started()
const hubId = hub.peerId
const nodes = await Promise.all(
  Array.from({ length: count }, async (_, i) => {
    const { libp2p, phoenix } = await createPhoenixLibp2p({ listen: ['/ip4/127.0.0.1/tcp/0'], hubs: [`${hubListen}/p2p/${hubId}`], names: [`n${i}`] })
    await libp2p.start()
    return { libp2p, phoenix }
  }),
)
try {
  await timeUntil(() => nodes.every((n) => n.phoenix.peers().length === count), 60_000, 'the nodes connect to the hub and to each other')
  await hub.kill()
  const killedAt = performance.now()
  await timeUntil(() => nodes.every((n) => !n.phoenix.peers().includes(hubId)), 30_000, 'the nodes notice the hub is gone')
  console.log(`hub killed; every node noticed after ${Math.round(performance.now() - killedAt)} ms; down for ${values['down-s']} s`)
  await sleep(Math.max(0, killedAt + downMs - performance.now()))
  const restartedAt = performance.now()
  hub = new ChildNode({ listen: hubListen, keyHex, names: ['hub'] })
  await hub.started()
  const listeningAt = performance.now()
  const reachedMs = await timeUntil(() => nodes.every((n) => n.phoenix.peers().includes(hubId) && n.phoenix.resolve('hub') !== undefined), 60_000, 'every node reaches the restarted hub')
  console.log(`restarted hub listening ${Math.round(listeningAt - restartedAt)} ms after its start; reached by all ${count} nodes ${Math.round(reachedMs)} ms after it listened (bound: redialBackoffMaxMs 4000 ms plus a dial)`)
} finally {
  await hub.kill()
  await Promise.all(nodes.map((n) => n.libp2p.stop()))
}
