/**
 * A bench node's own process: serves the driver's calls over the IPC channel (see rpc.ts).
 * Started by the driver only; `exit` stops the node and ends the process normally, so
 * `--cpu-prof` (if given) writes its profile.
 */
import { BenchNode } from './bench-node.ts'
import { invoke, type Reply, type Request } from './rpc.ts'

if (process.send === undefined) throw new Error('node-main.ts is started by the benchmark driver, with an IPC channel')
const send = process.send.bind(process)
const node = new BenchNode()

process.on('message', (request: Request) => {
  void (async () => {
    let reply: Reply
    try {
      if (request.method === 'exit') {
        await node.stop()
        send({ id: request.id, result: undefined } satisfies Reply, () => process.exit(0))
        return
      }
      reply = { id: request.id, result: await invoke(node, request.method, request.params) }
    } catch (error) {
      reply = { id: request.id, error: (error as Error).stack ?? String(error) }
    }
    send(reply)
  })()
})
// The driver ends us with `exit`; if it dies first, the channel closes and so do we.
process.on('disconnect', () => process.exit(0))
send({ ready: true })
