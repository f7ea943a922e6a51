import { Command, InvalidArgumentError } from 'commander'
import { createReadStream } from 'node:fs'
import { createInterface } from 'node:readline'
import type { Readable } from 'node:stream'
import { CONTROL_BODY_BYTES_MAX, SEND_WAIT_MS_DEFAULT, SEND_WAIT_MS_MAX } from '../constants.ts'
import { callControl, describeFailure, type ControlEndpoint } from '../control-client.ts'
import { shortId } from '../table.ts'
import { controlOption } from './inspect.ts'

interface SendOptions {
  control: ControlEndpoint
  ack?: boolean
  file?: string
  lines?: boolean
  waitMs: number
  json?: boolean
}

/** What `POST /send` answers. */
interface SendAnswer {
  acked: boolean
  name: string
  bytes: number
  ms: number
  id?: number
  route: { owner: string; nextHop: string; nhops: number } | null
}

function waitMsOption(value: string): number {
  const n = Number(value)
  if (!/^\d+$/.test(value) || n > SEND_WAIT_MS_MAX) throw new InvalidArgumentError(`must be an integer in [0, ${SEND_WAIT_MS_MAX}], got ${JSON.stringify(value)}`)
  return n
}

function tooLarge(source: string, bytes: string): Error {
  return new Error(`${source}: ${bytes} bytes, more than the control endpoint takes in one message (${CONTROL_BODY_BYTES_MAX}, CONTROL_BODY_BYTES_MAX)`)
}

function openSource(file: string | undefined): { stream: Readable; source: string } {
  if (file === undefined || file === '-') return { stream: process.stdin, source: 'stdin' }
  const stream = createReadStream(file)
  return { stream, source: `--file ${file}` }
}

/** Reads the whole message, refusing it past the control endpoint's cap rather than sending what will be refused. */
async function readMessage(file: string | undefined): Promise<Uint8Array> {
  const { stream, source } = openSource(file)
  const chunks: Buffer[] = []
  let size = 0
  try {
    for await (const chunk of stream) {
      size += (chunk as Buffer).length
      if (size > CONTROL_BODY_BYTES_MAX) throw tooLarge(source, `more than ${CONTROL_BODY_BYTES_MAX}`)
      chunks.push(chunk as Buffer)
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    throw code !== undefined ? new Error(`${source}: cannot read it (${code})`) : error
  } finally {
    stream.destroy()
  }
  return new Uint8Array(Buffer.concat(chunks))
}

function describeSent(answer: SendAnswer): string {
  // The line starts with what happened (scripts match `^acknowledged by`); the id, to match a retry or a recv line, ends it.
  const id = answer.id !== undefined ? ` (message ${answer.id})` : ''
  const route = answer.route === null ? '' : answer.route.nhops === 0 ? ' (this node)' : ` (${shortId(answer.route.owner)}, ${answer.route.nhops} hop${answer.route.nhops === 1 ? '' : 's'})`
  if (answer.acked) return `acknowledged by ${answer.name}${route} in ${answer.ms} ms${id}`
  return `sent to ${answer.name}${route} in ${answer.ms} ms${id}; not acknowledged (--ack waits for the receiver)`
}

async function sendOne(name: string, payload: Uint8Array, o: SendOptions, where: string): Promise<void> {
  const query = `name=${encodeURIComponent(name)}&waitMs=${o.waitMs}${o.ack === true ? '&ack=1' : ''}`
  const { status, text } = await callControl(o.control, 'POST', `/send?${query}`, payload)
  if (status !== 200) {
    const hint = status === 404 && /NO_ROUTE/.test(text) ? ' (--wait-ms sets how long to wait for a route)' : ''
    throw new Error(`send to ${name}${where}: ${describeFailure(status, text)}${hint}`)
  }
  process.stdout.write(o.json === true ? text : `${describeSent(JSON.parse(text) as SendAnswer)}\n`)
}

/** `--lines`: every line of the input is one message, sent (and, with --ack, acknowledged) in order as it arrives. */
async function sendLines(name: string, o: SendOptions): Promise<void> {
  const { stream, source } = openSource(o.file)
  let n = 0
  try {
    for await (const line of createInterface({ input: stream, crlfDelay: Infinity })) {
      n++
      const payload = new TextEncoder().encode(line)
      if (payload.length > CONTROL_BODY_BYTES_MAX) throw tooLarge(`${source} line ${n}`, String(payload.length))
      await sendOne(name, payload, o, `, line ${n}`)
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    throw code !== undefined && !(error as Error).message.startsWith('--control') ? new Error(`${source}: cannot read it (${code})`) : error
  }
}

export function registerSendCommand(program: Command): void {
  program
    .command('send')
    .description('send a message to a logical name through a running node (the message: an argument, --file, or stdin)')
    .addOption(controlOption())
    .argument('<name>', 'logical name of the destination')
    .argument('[message]', 'the message (UTF-8); without it, --file or stdin is read to the end')
    .option('--file <path>', 'read the message from this file (- for stdin)')
    .option('--lines', 'send every line of the input (stdin or --file) as one message, in order')
    .option('--ack', 'wait for the end-to-end acknowledgement and say so')
    .option('--wait-ms <ms>', `how long to wait for a route to the name (0: fail at once if there is none)`, waitMsOption, SEND_WAIT_MS_DEFAULT)
    .option('--json', "print the control endpoint's JSON answer")
    .action(async (name: string, message: string | undefined, o: SendOptions) => {
      if (message !== undefined && (o.file !== undefined || o.lines === true)) throw new Error(`${o.lines === true ? '--lines' : '--file'}: give the message as an argument or from the input, not both`)
      if (o.lines === true) return sendLines(name, o)
      const payload = message !== undefined ? new TextEncoder().encode(message) : await readMessage(o.file)
      if (payload.length > CONTROL_BODY_BYTES_MAX) throw tooLarge('message', String(payload.length))
      await sendOne(name, payload, o, '')
    })
}
