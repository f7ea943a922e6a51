import { REFUSED_CHARACTERS_RULE, hasRefusedCharacters, quoteEscaped } from '@phoenix-overlay/core'
import { Command, InvalidArgumentError } from 'commander'
import { createReadStream } from 'node:fs'
import type { ClientRequest, IncomingMessage } from 'node:http'
import { createInterface } from 'node:readline'
import type { Readable } from 'node:stream'
import { ConfigError } from '../config-error.ts'
import { CONTROL_BODY_BYTES_MAX, MESSAGE_ID_MAX, SEND_WAIT_MS_DEFAULT, SEND_WAIT_MS_MAX } from '../constants.ts'
import { answerError, callControl, controlText, describeFailure, openControlStream, type ControlEndpoint } from '../control-client.ts'
import { encodeFrame } from '../send-stream.ts'
import { shortId } from '../table.ts'
import { controlOption } from './inspect.ts'

interface SendOptions {
  control: ControlEndpoint
  ack?: boolean
  file?: string
  lines?: boolean
  waitMs: number
  ackTimeoutMs?: number
  messageId?: number
  json?: boolean
}

/** The query both sends take (`POST /send`, `POST /send-stream`). */
function sendQuery(name: string, o: SendOptions): string {
  const ack = o.ack === true ? `&ack=1${o.ackTimeoutMs !== undefined ? `&ackTimeoutMs=${o.ackTimeoutMs}` : ''}` : ''
  return `name=${encodeURIComponent(name)}&waitMs=${o.waitMs}${ack}${o.messageId !== undefined ? `&messageId=${o.messageId}` : ''}`
}

/**
 * What to try after a failure, by its code: which flag bounds the wait that ran out, or, for a
 * receiver that took nothing more (`UNDELIVERABLE`, `receiver-too-slow` / `no-consumer`), that
 * nothing reads its messages fast enough (found by hand: 14,097 lines sent to a node no `recv`
 * read, and the line said only "receiver-too-slow").
 */
function hintFor(code: string | undefined, reason?: string): string {
  if (code === 'NO_ROUTE') return ' (--wait-ms sets how long to wait for a route)'
  if (code === 'UNDELIVERABLE' && (reason === 'receiver-too-slow' || reason === 'no-consumer')) {
    return ' (the receiving node holds as many received messages from this sender as it buffers for one sender, a share that leaves room for the others: nothing reads them there, such as `phoenix recv`, or it reads slower than they come; not delivered, so sending it again later is safe)'
  }
  if (code === 'ACK_TIMEOUT') return ' (--ack-timeout-ms sets how long to wait for the acknowledgement; a retry with --message-id and that message\'s id is delivered at most once)'
  return ''
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

/**
 * Frames gathered before the streaming client writes them even within one turn of the event loop:
 * 64 KiB is one TCP window's worth, large enough that 4 KiB lines cost one write per 16.
 */
const FRAME_BATCH_BYTES_MAX = 64 * 1024

/** An integer option in [min, max], digits only. */
function integerOption(min: number, max: number): (value: string) => number {
  return (value) => {
    const n = Number(value)
    if (!/^\d+$/.test(value) || n < min || n > max) throw new InvalidArgumentError(`must be an integer in [${min}, ${max}], got ${JSON.stringify(value)}`)
    return n
  }
}

/**
 * A message larger than the control endpoint takes. From the command line (the argument, a
 * `--file`) it is a configuration error (exit 2: the same command can never pass); from stdin, as
 * any other input failure, exit 1.
 */
function tooLarge(source: string, bytes: number | undefined): Error {
  const line = `${source}: ${bytes === undefined ? 'over' : `${bytes} bytes, over`} the control endpoint's ${CONTROL_BODY_BYTES_MAX} bytes per message (CONTROL_BODY_BYTES_MAX)`
  return source.startsWith('stdin') ? new Error(line) : new ConfigError(line)
}

/** The input cannot be read: a `--file` that is missing or unreadable is a configuration error (exit 2), stdin failing is not. */
function unreadable(source: string, code: string): Error {
  const line = `${source}: cannot read it (${code})`
  return source === 'stdin' ? new Error(line) : new ConfigError(line)
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
      if (size > CONTROL_BODY_BYTES_MAX) throw tooLarge(source, undefined)
      chunks.push(chunk as Buffer)
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    throw code !== undefined ? unreadable(source, code) : error
  } finally {
    stream.destroy()
  }
  return new Uint8Array(Buffer.concat(chunks))
}

/**
 * Stdin without `--file` is text: its one final newline (`\n` or `\r\n`) ends the input, not the
 * message, as `--lines` drops each line's and a message argument has none, and as `recv` adds one
 * to each payload it prints: `echo hi | phoenix send w` sent "hi\n", which `recv` printed with a
 * blank line after it. `--file` (`-` for stdin) sends the bytes exactly.
 */
export function withoutFinalNewline(payload: Uint8Array): Uint8Array {
  const n = payload.length
  if (n === 0 || payload[n - 1] !== 0x0a) return payload
  return payload.subarray(0, n >= 2 && payload[n - 2] === 0x0d ? n - 2 : n - 1)
}

/** What `--lines` says on stderr when its input had no line: it sent nothing, and succeeded (as `members` matching nothing does). */
export const NO_LINES_NOTE = 'phoenix: send --lines: the input had no lines; nothing was sent\n'

function describeSent(answer: SendAnswer): string {
  // The line starts with what happened (scripts match `^acknowledged by`); the id, to match a retry or a recv line, ends it.
  const id = answer.id !== undefined ? ` (message ${answer.id})` : ''
  const route = answer.route === null ? '' : answer.route.nhops === 0 ? ' (this node)' : ` (${shortId(answer.route.owner)}, ${answer.route.nhops} hop${answer.route.nhops === 1 ? '' : 's'})`
  if (answer.acked) return `acknowledged by ${answer.name}${route} in ${answer.ms} ms${id}`
  return `sent to ${answer.name}${route} in ${answer.ms} ms${id}; not acknowledged (--ack waits for the receiver)`
}

async function sendOne(name: string, payload: Uint8Array, o: SendOptions, where: string): Promise<void> {
  const { status, text } = await callControl(o.control, 'POST', `/send?${sendQuery(name, o)}`, payload)
  if (status !== 200) {
    const failure = (() => {
      try {
        return JSON.parse(text) as { error?: string; reason?: string }
      } catch {
        return {}
      }
    })()
    // --json prints the endpoint's answer, a failure's too, as --lines does (a script read nothing: the message id of an ACK_TIMEOUT to retry with was on stderr only).
    if (o.json === true && failure.error !== undefined) process.stdout.write(text.endsWith('\n') ? text : `${text}\n`)
    const hint = hintFor(failure.error, failure.reason)
    throw answerError(status, `send to ${name}${where}: ${describeFailure(status, text)}${hint}`)
  }
  process.stdout.write(o.json === true ? text : `${describeSent(JSON.parse(text) as SendAnswer)}\n`)
}

/**
 * Writes frames to a streaming request, coalescing those written in one turn of the event loop
 * (the lines of one input chunk) into one write, and waiting while the connection is full.
 */
class FrameWriter {
  private batch: Uint8Array[] = []
  private batchBytes = 0
  private scheduled = false

  constructor(private readonly body: ClientRequest) {}

  async write(frame: Uint8Array): Promise<void> {
    this.batch.push(frame)
    this.batchBytes += frame.length
    if (this.batchBytes >= FRAME_BATCH_BYTES_MAX) {
      if (!this.flush()) await new Promise<void>((resolve) => this.whenWritable(resolve))
    } else if (!this.scheduled) {
      this.scheduled = true
      setImmediate(() => this.flush())
    }
  }

  end(): void {
    this.flush()
    this.body.end()
  }

  /** False: the connection's buffer is full, wait for drain. */
  private flush(): boolean {
    this.scheduled = false
    if (this.batch.length === 0 || this.body.destroyed) return true
    const chunk = this.batch.length === 1 ? this.batch[0]! : Buffer.concat(this.batch)
    this.batch = []
    this.batchBytes = 0
    return this.body.write(chunk)
  }

  private whenWritable(resolve: () => void): void {
    const done = () => {
      this.body.off('drain', done)
      this.body.off('close', done)
      resolve()
    }
    this.body.on('drain', done)
    this.body.on('close', done)
  }
}

/** How the node's answer to a streaming send ended. */
type StreamEnd =
  | { readonly kind: 'done' }
  /** The node refused a message, or the request: one line saying so. */
  | { readonly kind: 'failed'; readonly line: string }
  /** The connection closed before the node's `done` (it stopped or crashed), after `answered` lines. */
  | { readonly kind: 'closed'; readonly answered: number; readonly cause: string }

/**
 * After the node closed a streaming send's connection with every line written answered, how long
 * the input may take to end: a pipeline fed by the same node (`recv | … | send --lines`) ends just
 * after the node leaves, and then nothing was lost. A line that comes instead, or an input still
 * open after this, fails the send.
 */
const NODE_GONE_INPUT_END_WAIT_MS = 2_000

/** Reads the stream's answer, printing each message's line. */
async function readAnswers(response: Promise<IncomingMessage>, name: string, o: SendOptions): Promise<StreamEnd> {
  const res = await response
  if (res.statusCode !== 200) {
    const chunks: Buffer[] = []
    for await (const chunk of res) chunks.push(chunk as Buffer)
    return { kind: 'failed', line: `send to ${name}: ${describeFailure(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'))}` }
  }
  let answered = 0
  try {
    for await (const line of createInterface({ input: res, crlfDelay: Infinity })) {
      if (line === '') continue
      const answer = JSON.parse(line) as SendAnswer & { done?: boolean; error?: string; message?: string; reason?: string; index?: number; sent?: number }
      if (answer.error !== undefined) {
        // --json prints the endpoint's answer, its failure line too (then the one-line error on stderr).
        if (o.json === true) process.stdout.write(`${line}\n`)
        const hint = hintFor(answer.error, answer.reason)
        // The stream stops at the first failure: say what that left unsent (the rest of the input).
        const before = answer.sent === undefined ? '' : answer.sent === 0 ? '; nothing was sent' : `; the ${answer.sent} line(s) before it were sent, no later line was`
        return { kind: 'failed', line: `send to ${name}, line ${answer.index}: ${answer.error}: ${answer.message ?? ''}${hint}${before}` }
      }
      if (answer.done === true) {
        // --json prints the endpoint's answer, its last line too (it was left out).
        if (o.json === true) process.stdout.write(`${line}\n`)
        return { kind: 'done' }
      }
      answered++
      process.stdout.write(o.json === true ? `${line}\n` : `${describeSent(answer)}\n`)
    }
  } catch (error) {
    // The node died mid-stream (this said only "aborted"): what it answered is settled, the rest unknown.
    return { kind: 'closed', answered, cause: (error as Error).message }
  }
  return { kind: 'closed', answered, cause: 'its answer ended early' }
}

/** Why a send whose node closed the connection failed: what was answered, what may have gone, what was not sent. */
function closedFailure(name: string, o: SendOptions, end: Extract<StreamEnd, { kind: 'closed' }>, written: number, input: 'more' | 'open' | 'ended'): string {
  const unsure = written - end.answered
  const answered = unsure === 0 ? `all ${written} line(s) written` : `${end.answered} of the ${written} line(s) written; the last ${unsure} may or may not have been sent`
  const rest = input === 'more' ? "; the input's later lines were not sent" : input === 'open' ? `; the input had not ended ${NODE_GONE_INPUT_END_WAIT_MS / 1000} s later, and nothing more was sent` : ''
  return `send to ${name}: --control ${controlText(o.control)}: the node closed the connection (it stopped or crashed: ${end.cause}) after answering ${answered}${rest}`
}

/**
 * `--lines`: every line of the input is one message, sent in order as it arrives, all in one
 * streaming request (`POST /send-stream`); the node answers a line per message sent (with --ack:
 * acknowledged) and stops at the first failure, which ends the input here too. If the node goes
 * away with every line written answered, the send still succeeds when the input ends with no
 * further line (NODE_GONE_INPUT_END_WAIT_MS): nothing was lost.
 */
async function sendLines(name: string, o: SendOptions): Promise<void> {
  const { stream, source } = openSource(o.file)
  const { body, response } = openControlStream(o.control, 'POST', `/send-stream?${sendQuery(name, o)}`)
  const lines = createInterface({ input: stream, crlfDelay: Infinity })
  let stopped = false
  let inputOpen = false
  let closed: Extract<StreamEnd, { kind: 'closed' }> | undefined
  let inputWait: NodeJS.Timeout | undefined
  const stopInput = () => {
    stopped = true
    lines.close()
  }
  // The node's answer ends early only at a failure or a closed connection: stop reading the input
  // then, except to see whether it ends with nothing more to send.
  const answers = readAnswers(response, name, o).then(
    (end) => {
      if (end.kind !== 'closed') stopInput()
      else {
        closed = end
        inputWait = setTimeout(() => ((inputOpen = true), stopInput()), NODE_GONE_INPUT_END_WAIT_MS)
      }
      return end
    },
    (error: unknown) => {
      stopInput()
      throw error
    },
  )
  // Awaited after the input loop; marked handled now so an early failure is not an unhandled rejection.
  answers.catch(() => undefined)
  response.catch(stopInput)
  const writer = new FrameWriter(body)
  let inputFailure: Error | undefined
  let more = false
  let n = 0
  try {
    for await (const line of lines) {
      if (stopped) break
      // A line the node is no longer there to take.
      if (closed !== undefined) {
        more = true
        break
      }
      n++
      const payload = new TextEncoder().encode(line)
      if (payload.length > CONTROL_BODY_BYTES_MAX) throw tooLarge(`${source} line ${n}`, payload.length)
      await writer.write(encodeFrame(payload))
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    inputFailure = code !== undefined ? unreadable(source, code) : (error as Error)
  } finally {
    writer.end()
    stream.destroy()
  }
  const end = await answers
  clearTimeout(inputWait)
  if (end.kind === 'failed') throw new Error(end.line)
  if (inputFailure !== undefined) throw inputFailure
  if (end.kind === 'closed' && (more || inputOpen || end.answered < n)) throw new Error(closedFailure(name, o, end, n, more ? 'more' : inputOpen ? 'open' : 'ended'))
  // An empty input printed nothing at all, which read as a send still waiting or one that was lost.
  if (n === 0) process.stderr.write(NO_LINES_NOTE)
}

export function registerSendCommand(program: Command): void {
  program
    .command('send')
    .description('send a message to a logical name through a running node (the message: an argument, --file, or stdin)')
    .addOption(controlOption())
    .argument('<name>', 'logical name of the destination')
    .argument('[message]', 'the message (UTF-8); without it, stdin is read to the end as text (its final newline dropped), or --file')
    .option('--file <path>', 'read the message from this file, its bytes exactly (- for stdin\'s bytes exactly)')
    .option('--lines', 'send every line of the input (stdin or --file) as one message, in order, without its newline; an input with no line sends nothing, and says so on stderr')
    .option('--ack', 'wait for the end-to-end acknowledgement and say so')
    .option('--wait-ms <ms>', `how long to wait for a route to the name (0: fail at once if there is none)`, integerOption(0, SEND_WAIT_MS_MAX), SEND_WAIT_MS_DEFAULT)
    .option('--message-id <id>', 'the message id, to retry a send that failed: the receiver delivers one id once', integerOption(1, MESSAGE_ID_MAX))
    .option('--ack-timeout-ms <ms>', "with --ack: how long to wait for the acknowledgement (default: the node's, 10 s)", integerOption(1, SEND_WAIT_MS_MAX))
    .option('--json', "print the control endpoint's JSON answer")
    .action(async (name: string, message: string | undefined, o: SendOptions) => {
      // No node holds such a name (the core refuses them), and printed raw it would break the one-line error.
      if (hasRefusedCharacters(name)) throw new ConfigError(`<name> ${quoteEscaped(name)} ${REFUSED_CHARACTERS_RULE}`)
      // Checked here: the node's answer named its endpoint ("POST /send needs a value for it").
      if (name === '') throw new ConfigError('<name>: must be a non-empty string, a name a node holds (phoenix members \'*\' lists them)')
      // It said "give the message as an argument or from the input, not both", as if either would do.
      if (message !== undefined && o.lines === true) throw new ConfigError('--lines: sends each line of the input (stdin or --file) as a message; give no <message> argument with it')
      if (message !== undefined && o.file !== undefined) throw new ConfigError('--file: give the message as an argument or from the input, not both')
      if (o.ackTimeoutMs !== undefined && o.ack !== true) throw new ConfigError('--ack-timeout-ms: has no effect without --ack')
      if (o.messageId !== undefined && o.lines === true) throw new ConfigError('--message-id: one id is one message; --lines sends many')
      if (o.lines === true) return sendLines(name, o)
      const payload = message !== undefined ? new TextEncoder().encode(message) : o.file === undefined ? withoutFinalNewline(await readMessage(undefined)) : await readMessage(o.file)
      if (payload.length > CONTROL_BODY_BYTES_MAX) throw tooLarge('<message>', payload.length)
      await sendOne(name, payload, o, '')
    })
}
