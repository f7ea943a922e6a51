import { Command, InvalidArgumentError } from 'commander'
import { once } from 'node:events'
import { ConfigError } from '../config-error.ts'
import { answerError, callControl, describeFailure, openControl, readAnswer, type ControlEndpoint } from '../control-client.ts'
import { payloadOfLine, type MessageLine } from '../message-line.ts'
import { undeliverableNameProblem } from '@phoenix-overlay/transport'
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

/** Takes one message from the node (`GET /messages?count=1`); undefined when the node ended the stream first (it is leaving). */
async function takeOne(endpoint: ControlEndpoint, query: URLSearchParams): Promise<string | undefined> {
  const res = await openControl(endpoint, 'GET', `/messages?${query.toString()}`)
  const text = await readAnswer(endpoint, res)
  if (res.statusCode !== 200) throw answerError(res.statusCode ?? 0, `recv: ${describeFailure(res.statusCode ?? 0, text)}`)
  return text.trim() === '' ? undefined : text.trim()
}

/**
 * A name the node does not hold gets no message: recv would wait without a word. It still waits
 * (the name may be added later), but says so once.
 */
async function warnOfNamesNotHeld(o: RecvOptions): Promise<void> {
  if (o.name.length === 0) return
  const { status, text } = await callControl(o.control, 'GET', '/status')
  if (status !== 200) return
  const held = (JSON.parse(text) as { names?: string[] }).names ?? []
  for (const name of o.name) {
    if (held.includes(name)) continue
    process.stderr.write(`phoenix: recv: this node does not hold the name ${JSON.stringify(name)} (its names: ${held.join(', ') || 'none'}); its messages come only once it does (phoenix node --name, or POST /names?add=)\n`)
  }
}

/**
 * Prints messages as the node hands them over, asking for one at a time: a message is taken from
 * the node's inbox only when recv is ready to print it, so a recv that is killed (or whose reader
 * goes away, `phoenix recv | head -1`) loses at most the one message it was printing.
 */
async function recv(o: RecvOptions): Promise<void> {
  const query = new URLSearchParams()
  for (const name of o.name) query.append('name', name)
  query.set('count', '1')
  // Killing recv must not wait for a message: its launcher's death or a signal ends it at once.
  guardProcess({ stop: async () => {}, say: () => {} })
  // A reader that went away ends recv quietly, as it would any filter.
  process.stdout.on('error', () => process.exit(0))
  await warnOfNamesNotHeld(o)
  let received = 0
  while (o.count === undefined || received < o.count) {
    const line = await takeOne(o.control, query)
    if (line === undefined) break
    received++
    if (o.json === true) await write(`${line}\n`)
    else {
      await write(payloadOfLine(JSON.parse(line) as MessageLine))
      await write('\n')
    }
  }
  if (o.count !== undefined && received < o.count) throw new Error(`recv: the node ended the stream after ${received} of ${o.count} messages (it is leaving)`)
  // Without --count that is the end of the messages, not a failure; but said, or recv ended silently.
  if (o.count === undefined) process.stderr.write(`phoenix: recv: the node is leaving; ${received} message(s) received\n`)
}

export function registerRecvCommand(program: Command): void {
  program
    .command('recv')
    .description('print messages a running node receives, as they arrive (each message goes to one reader)')
    .addOption(controlOption())
    .option('--name <name>', 'only messages sent to this name (repeatable; default: every name)', collect, [] as string[])
    .option('--count <n>', 'exit after n messages', countOption)
    .option('--json', 'one JSON line per message: {"from","name","id","hops","text"|"base64"}')
    .action(async (o: RecvOptions) => {
      // A name no node can hold would wait for good (exit 2 at once, as send refuses it).
      for (const name of o.name) {
        const problem = undeliverableNameProblem(name)
        if (problem !== undefined) throw new ConfigError(`--name: ${problem}`)
      }
      return recv(o)
    })
}
