import { Command, InvalidArgumentError } from 'commander'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { describeFailure, openControl, type ControlEndpoint } from '../control-client.ts'
import { payloadOfLine, type MessageLine } from '../message-line.ts'
import { guardProcess } from '../process-guard.ts'
import { controlOption } from './inspect.ts'

const collect = (value: string, previous: string[]) => [...previous, value]

interface RecvOptions {
  control: ControlEndpoint
  name: string[]
  count?: number
  json?: boolean
}

function countOption(value: string): number {
  const n = Number(value)
  if (!/^\d+$/.test(value) || n < 1 || !Number.isSafeInteger(n)) throw new InvalidArgumentError(`must be a positive integer, got ${JSON.stringify(value)}`)
  return n
}

async function write(text: string | Uint8Array): Promise<void> {
  if (!process.stdout.write(text)) await once(process.stdout, 'drain')
}

/**
 * Streams messages from a node's `GET /messages`. With `--count` the node itself stops after that
 * many, so none is handed to this reader and then lost when it exits.
 */
async function recv(o: RecvOptions): Promise<void> {
  const query = new URLSearchParams()
  for (const name of o.name) query.append('name', name)
  if (o.count !== undefined) query.set('count', String(o.count))
  const res = await openControl(o.control, 'GET', `/messages?${query.toString()}`)
  if (res.statusCode !== 200) {
    const chunks: Buffer[] = []
    for await (const chunk of res) chunks.push(chunk as Buffer)
    throw new Error(`recv: ${describeFailure(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'))}`)
  }
  // Killing recv must not wait for a message: its launcher's death or a signal ends it at once.
  guardProcess({ stop: async () => void res.destroy(), say: () => {} })
  let received = 0
  for await (const line of createInterface({ input: res, crlfDelay: Infinity })) {
    if (line === '') continue
    received++
    if (o.json === true) await write(`${line}\n`)
    else {
      await write(payloadOfLine(JSON.parse(line) as MessageLine))
      await write('\n')
    }
  }
  if (o.count !== undefined && received < o.count) throw new Error(`recv: the node ended the stream after ${received} of ${o.count} messages (it is leaving)`)
}

export function registerRecvCommand(program: Command): void {
  program
    .command('recv')
    .description('print messages a running node receives, as they arrive (each message goes to one reader)')
    .addOption(controlOption())
    .option('--name <name>', 'only messages sent to this name (repeatable; default: every name)', collect, [] as string[])
    .option('--count <n>', 'exit after n messages', countOption)
    .option('--json', 'one JSON line per message: {"from","name","id","hops","text"|"base64"}')
    .action(async (o: RecvOptions) => recv(o))
}
