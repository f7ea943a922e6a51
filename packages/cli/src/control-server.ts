import { undeliverableNameProblem, type PhoenixNode, type TransportErrorCode } from '@phoenix-overlay/transport'
import { serveOverlayPage } from './overlay-page/page.ts'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { browserRefusal } from './browser-guard.ts'
import { PeerUserGate, type PeerUsers } from './peer-user.ts'
import { CONTROL_BODY_BYTES_MAX, MESSAGE_ID_MAX, SEND_WAIT_MS_DEFAULT, SEND_WAIT_MS_MAX } from './constants.ts'
import type { Inbox, InboxReader } from './inbox.ts'
import { toMessageLine } from './message-line.ts'
import { nameProblem } from '@phoenix-overlay/core'
import { FrameError, FrameReader } from './send-stream.ts'

/** What the control endpoint serves, once the node has started. */
export interface ControlTarget {
  readonly phoenix: PhoenixNode
  readonly id: string
  addresses(): string[]
  readonly inbox: Inbox
  readonly version: string
  /** The node's core limit `namesPerNodeMax`: `POST /names` checks a request against it before changing anything. */
  readonly namesPerNodeMax: number
}

/** A request refused before it reached the node (an HTTP status and a one-line reason). */
/** A request the endpoint refuses itself; `field`: the parameter at fault (`body` for the body), in the answer as a transport error's is. */
class ControlError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message)
  }
}

const USAGE =
  'GET / (the overlay page) /status /routes /peers /topology /members?pattern= /metrics /messages?name=&count=, POST /send?name=&ack=1&waitMs=&ackTimeoutMs=&messageId= (body: the message), POST /send-stream?name=&ack=1&waitMs=&ackTimeoutMs= (body: length-prefixed messages), POST /names?add=&remove=, POST /hubs?add='

/**
 * How often a streaming send retries a message its first hop's queue refused (QUEUE_FULL): the
 * transport has no "room again" event, and 1 ms is what the library's own senders poll at
 * (bench/src/phoenix-adapter.ts); the wait is bounded by the request's waitMs.
 */
const STREAM_QUEUE_RETRY_MS = 1

/**
 * The HTTP status of each error code the transport raises. Typed over every code but the legacy
 * `RECEIVER_TOO_SLOW`, which nothing raises any more (a full receiver is `UNDELIVERABLE`, reason
 * `receiver-too-slow`, 502), so a code the transport adds fails the typecheck here until it has one.
 * 400 only for the caller's own mistake: the CLI exits 2 on a 400 ("the command line is wrong").
 */
const STATUS_OF: Record<Exclude<TransportErrorCode, 'RECEIVER_TOO_SLOW'>, number> = {
  INVALID_INPUT: 400,
  NO_ROUTE: 404,
  UNDELIVERABLE: 502,
  QUEUE_FULL: 503,
  NOT_STARTED: 503,
  ACK_TIMEOUT: 504,
  // The node's runtime cannot do it (a node never starts there, so none should reach a request).
  UNSUPPORTED: 500,
}

/**
 * The status and code a failed request answers: the transport's code and its status, or 500
 * `ERROR` for anything else (a bug of ours or of the host: it was 400, so `phoenix send` exited 2,
 * blaming the command line).
 */
export function failureStatus(error: unknown): { status: number; code: string } {
  // PhoenixTransportError, by name: this module is loaded before the transport, which is slow to load.
  const code = error instanceof Error && error.name === 'PhoenixTransportError' ? String((error as Error & { code: unknown }).code) : 'ERROR'
  return { status: Object.hasOwn(STATUS_OF, code) ? STATUS_OF[code as keyof typeof STATUS_OF] : 500, code }
}

/** The transport error's details a failure answer carries besides its code and message, those it has (`PhoenixTransportError`). */
const FAILURE_DETAILS = ['reason', 'node', 'messageId', 'field'] as const

/**
 * A failure's answer: `{ error, message }`, and the transport's `reason`, `node`, `messageId` and
 * `field` where the error has them, so a script switches on `reason` (`receiver-too-slow`) rather
 * than parsing the message.
 */
function failureBody(error: unknown): Record<string, unknown> {
  const body: Record<string, unknown> = { error: failureStatus(error).code, message: (error as Error).message }
  if (body.error === 'ERROR') return body
  for (const key of FAILURE_DETAILS) {
    const value = (error as Record<string, unknown>)[key]
    if (value !== undefined) body[key] = value
  }
  return body
}

function reply(res: ServerResponse, status: number, body: unknown, contentType = 'application/json'): void {
  res.writeHead(status, { 'content-type': contentType })
  res.end(contentType === 'application/json' ? `${JSON.stringify(body)}\n` : String(body))
}

async function readBody(req: IncomingMessage): Promise<Uint8Array> {
  const tooLarge = () => new ControlError(413, 'INVALID_INPUT', `the message is larger than the control endpoint's ${CONTROL_BODY_BYTES_MAX} bytes (CONTROL_BODY_BYTES_MAX)`, 'body')
  if (Number(req.headers['content-length'] ?? 0) > CONTROL_BODY_BYTES_MAX) throw tooLarge()
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req) {
    size += (chunk as Buffer).length
    if (size > CONTROL_BODY_BYTES_MAX) throw tooLarge()
    chunks.push(chunk as Buffer)
  }
  return new Uint8Array(Buffer.concat(chunks))
}

/**
 * The query parameters each request takes. Any other is refused (400) naming it: a misspelt one
 * (`waitms=0`, `count=1&nmae=x`) silently ignored would change what the request does.
 */
const PARAMS: Readonly<Record<string, readonly string[]>> = {
  'POST /send': ['name', 'ack', 'waitMs', 'ackTimeoutMs', 'messageId'],
  'POST /send-stream': ['name', 'ack', 'waitMs', 'ackTimeoutMs'],
  'GET /messages': ['name', 'count'],
  'GET /members': ['pattern'],
  'POST /names': ['add', 'remove'],
  'POST /hubs': ['add'],
  'GET /routes': [],
  'GET /peers': [],
  'GET /topology': [],
  'GET /metrics': [],
  'GET /status': [],
}

/** Refuses a parameter `at` does not take (`PARAMS`), and an empty value of one it does; a request not listed (the page, a wrong path) is not checked. */
function checkParams(url: URL, at: string): void {
  const allowed = PARAMS[at]
  if (allowed === undefined) return
  for (const [key, value] of url.searchParams) {
    if (!allowed.includes(key)) {
      const takes = allowed.length === 0 ? 'takes no parameters' : `takes ${allowed.join(', ')}`
      throw new ControlError(400, 'INVALID_INPUT', `unknown parameter ${JSON.stringify(key)}: ${at} ${takes}`, key)
    }
    if (value === '' && key !== 'pattern') throw new ControlError(400, 'INVALID_INPUT', `${key} is empty: ${at} needs a value for it`, key)
  }
}

function integerParam(url: URL, name: string, fallback: number | undefined, min: number, max: number): number | undefined {
  const text = url.searchParams.get(name)
  if (text === null) return fallback
  const n = Number(text)
  if (!/^\d+$/.test(text) || n < min || n > max) throw new ControlError(400, 'INVALID_INPUT', `${name} must be an integer in [${min}, ${max}], got ${JSON.stringify(text)}`, name)
  return n
}

/** The sender's message id, as the transport's `send` gives it (`{ messageId }`). */
function sentId(sent: unknown): number | undefined {
  if (typeof sent === 'object' && sent !== null && 'messageId' in sent && typeof sent.messageId === 'number') return sent.messageId
  return undefined
}

/** The query of both sends: the name, how long to wait for a route, whether to wait for the ack. */
/** What both sends take from the query; `options` goes to `PhoenixNode.send` as it is. */
interface SendParams {
  name: string
  options: { ack: boolean; routeWaitMs: number; ackTimeoutMs?: number; messageId?: number }
}

function sendParams(url: URL, what: string): SendParams {
  const name = url.searchParams.get('name')
  // An empty value is refused before (checkParams).
  if (name === null) throw new ControlError(400, 'INVALID_INPUT', `${what} needs ?name=<logical name>`, 'name')
  const waitMs = integerParam(url, 'waitMs', SEND_WAIT_MS_DEFAULT, 0, SEND_WAIT_MS_MAX)!
  const ack = url.searchParams.get('ack')
  if (ack !== null && ack !== '0' && ack !== '1') throw new ControlError(400, 'INVALID_INPUT', `ack must be 0 or 1, got ${JSON.stringify(ack)}`, 'ack')
  // Without it, the node's ackTimeoutMs (10 s): a stopped receiver held `phoenix send --ack` that long.
  const ackTimeoutMs = integerParam(url, 'ackTimeoutMs', undefined, 1, SEND_WAIT_MS_MAX)
  if (ackTimeoutMs !== undefined && ack !== '1') throw new ControlError(400, 'INVALID_INPUT', 'ackTimeoutMs is the wait for an acknowledgement: it needs ack=1', 'ackTimeoutMs')
  // A retry with the id of a send that timed out is delivered at most once (POST /send only: PARAMS).
  const messageId = integerParam(url, 'messageId', undefined, 1, MESSAGE_ID_MAX)
  const options = { ack: ack === '1', routeWaitMs: waitMs, ...(ackTimeoutMs !== undefined ? { ackTimeoutMs } : {}), ...(messageId !== undefined ? { messageId } : {}) }
  return { name, options }
}

/** One message sent, as both sends answer it. */
function sentAnswer(target: ControlTarget, name: string, ack: boolean, bytes: number, t0: number, sent: unknown): Record<string, unknown> {
  const id = sentId(sent)
  return { sent: true, acked: ack, name, bytes, ms: +(performance.now() - t0).toFixed(2), route: target.phoenix.resolve(name) ?? null, ...(id !== undefined ? { id } : {}) }
}

async function send(target: ControlTarget, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const { name, options } = sendParams(url, 'send')
  const body = await readBody(req)
  const t0 = performance.now()
  // The body is ours alone: handed over, not copied again (SendOptions.transfer).
  const sent: unknown = await target.phoenix.send(name, body, { ...options, transfer: true })
  reply(res, 200, sentAnswer(target, name, options.ack, body.length, t0, sent))
}

/**
 * One message of a stream: a full first-hop queue (QUEUE_FULL) is waited out, retrying every
 * STREAM_QUEUE_RETRY_MS for up to `waitMs`, as a library sender does; meanwhile the request is
 * not read, so the client's writes block (TCP backpressure) instead of growing any buffer here.
 */
async function sendWaitingForRoom(target: ControlTarget, name: string, payload: Uint8Array, options: SendParams['options']): Promise<unknown> {
  const deadline = performance.now() + options.routeWaitMs
  for (;;) {
    try {
      return await target.phoenix.send(name, payload, { ...options, transfer: payload.byteLength >= TRANSFER_BYTES_MIN })
    } catch (error) {
      const full = error instanceof Error && (error as Error & { code?: unknown }).code === 'QUEUE_FULL'
      if (!full || performance.now() >= deadline) throw error
      await new Promise((resolve) => setTimeout(resolve, STREAM_QUEUE_RETRY_MS))
    }
  }
}

/**
 * A streamed message is a view into the request chunk it arrived in (send-stream.ts), which is
 * ours alone, so it is handed over (SendOptions.transfer) instead of copied; but a small view
 * handed over would keep its whole chunk (up to 64 KiB) alive until written, so below this size
 * the copy is the cheaper of the two.
 */
const TRANSFER_BYTES_MIN = 16 * 1024

/**
 * Answer lines gathered before a write: one request chunk's (64 KiB of the body at most, so a
 * few hundred lines), or this many characters if that comes first, so a chunk of tiny messages
 * cannot make one unbounded string.
 */
const ANSWER_WRITE_CHARS_MAX = 64 * 1024

/** Writes gathered answer lines, waiting for 'drain' if the client reads slowly (a client gone is noticed before the next send). */
async function writeAnswers(res: ServerResponse, answers: string): Promise<void> {
  if (answers !== '' && !res.write(answers)) await drainedOrClosed(res)
}

/** Resolves once the answer may be written again, or its connection is gone (then the next read fails). */
function drainedOrClosed(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done)
      res.off('close', done)
      resolve()
    }
    res.on('drain', done)
    res.on('close', done)
  })
}

/** The error line that ends a stream: the code, the one-line reason, and which message (1-based). */
function streamFailure(error: unknown, index: number, sent: number): Record<string, unknown> {
  if (error instanceof FrameError) return { error: 'INVALID_INPUT', message: error.message, field: 'body', index: error.index, sent }
  return { ...failureBody(error), index, sent }
}

/**
 * `POST /send-stream`: the body is any number of frames (send-stream.ts), each sent in order as it
 * arrives, each only once the one before was sent (with `ack=1`: acknowledged). The answer is an
 * NDJSON stream: one line per message sent (what `POST /send` answers), then `{"done":true,…}`,
 * or, at the first failure, one error line naming the message (`index`) and nothing more is sent.
 */
async function sendStream(target: ControlTarget, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const { name, options } = sendParams(url, 'send-stream')
  res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' })
  const frames = new FrameReader(CONTROL_BODY_BYTES_MAX)
  const started = performance.now()
  let sent = 0
  let bytes = 0
  // The answer lines of one request chunk's messages go out as one string in one write, not a
  // write each: in chunked encoding every write is three (size, data, CRLF), and turning many
  // small strings into bytes was the control node's largest cost at 4 KiB, measured.
  let answers = ''
  try {
    // destroyOnReturn false: leaving the loop on a failure must not destroy the socket before the error line is out.
    for await (const chunk of req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
      for (const payload of frames.push(chunk)) {
        if (res.destroyed) throw new Error(`the client went away after message ${sent}`)
        const t0 = performance.now()
        const result = await sendWaitingForRoom(target, name, payload, options)
        sent++
        bytes += payload.length
        answers += `${JSON.stringify(sentAnswer(target, name, options.ack, payload.length, t0, result))}\n`
        if (answers.length >= ANSWER_WRITE_CHARS_MAX) {
          await writeAnswers(res, answers)
          answers = ''
        }
      }
      await writeAnswers(res, answers)
      answers = ''
    }
    frames.end()
    res.end(`${answers}${JSON.stringify({ done: true, sent, bytes, ms: +(performance.now() - started).toFixed(2) })}\n`)
  } catch (error) {
    // The lines of the messages sent before the failure first, then the one that names it.
    res.end(`${answers}${JSON.stringify(streamFailure(error, sent + 1, sent))}\n`)
    // Read away what the client still sends, so it reads the answer rather than a reset.
    req.resume()
  }
}

/**
 * `GET /messages`: an NDJSON stream of received messages (see message-line.ts), each handed to
 * exactly one reader. `name` (repeatable) takes only those names; `count` ends the stream after
 * that many, so a reader that wants n messages is never handed an (n+1)th it would drop.
 */
/** The open `GET /messages` streams, and whether they were ended (the node is leaving: a new one ends at once). */
interface Streams {
  readonly open: Set<ServerResponse>
  ended: boolean
}

function streamMessages(target: ControlTarget, req: IncomingMessage, res: ServerResponse, url: URL, streams: Streams): void {
  const names = url.searchParams.getAll('name')
  for (const name of names) {
    const problem = undeliverableNameProblem(name)
    if (problem !== undefined) throw new ControlError(400, 'INVALID_INPUT', `name ${problem}`, 'name')
  }
  let remaining = integerParam(url, 'count', Number.POSITIVE_INFINITY, 1, Number.MAX_SAFE_INTEGER)!
  res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' })
  res.flushHeaders()
  // Leaving: a reader's next request is answered at once with no message (recv then says the node
  // is leaving); it was left to meet the closed socket ("socket hang up", exit 1).
  if (streams.ended) return void res.end()
  streams.open.add(res)
  let detach: (() => void) | undefined
  let finished = false
  const reader: InboxReader = {
    names: names.length > 0 ? new Set(names) : undefined,
    fallback: false,
    accepting: () => !res.destroyed && !res.writableEnded && req.socket.writable,
    take: (message) => {
      const flowing = res.write(toMessageLine(message))
      if (--remaining === 0) {
        finished = true
        detach?.()
        res.end()
        return false
      }
      if (!flowing) res.once('drain', () => target.inbox.ready(reader))
      return flowing
    },
  }
  detach = target.inbox.attach(reader)
  if (finished) detach()
  res.on('close', () => {
    detach?.()
    streams.open.delete(res)
  })
  req.resume()
}

async function route(target: ControlTarget, req: IncomingMessage, res: ServerResponse, streams: Streams): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://control')
  const { phoenix } = target
  const at = `${req.method} ${url.pathname}`
  checkParams(url, at)
  if (at === 'GET /routes') return reply(res, 200, phoenix.routes())
  if (at === 'GET /peers') return reply(res, 200, phoenix.peers())
  if (req.method === 'GET' && (await serveOverlayPage(url.pathname, res))) return
  if (at === 'GET /topology') return reply(res, 200, phoenix.topology())
  if (at === 'GET /members') return reply(res, 200, phoenix.members(url.searchParams.get('pattern') ?? ''))
  if (at === 'GET /metrics') return reply(res, 200, phoenix.metricsText(), 'text/plain; version=0.0.4')
  if (at === 'GET /messages') return streamMessages(target, req, res, url, streams)
  if (at === 'POST /send') return send(target, req, res, url)
  if (at === 'POST /send-stream') return sendStream(target, req, res, url)
  if (at === 'GET /status') {
    const reachable = phoenix.routes().filter((r) => r.reachable).length
    return reply(res, 200, { id: target.id, pid: process.pid, version: target.version, addresses: target.addresses(), names: phoenix.names, peers: phoenix.peers().length, reachable, inbox: { messages: target.inbox.size, bytes: target.inbox.bytes, readers: streams.open.size } })
  }
  if (at === 'POST /hubs') {
    const added = url.searchParams.getAll('add')
    // Nothing to add answered 200 {"added":0}: a script that built the query wrong heard success.
    if (added.length === 0) throw new ControlError(400, 'INVALID_INPUT', 'POST /hubs needs ?add=<multiaddr> (repeatable)', 'add')
    // Hubs cannot be taken back (there is no removeHub): a failure says which were added before it.
    added.forEach((hub, i) => {
      try {
        phoenix.addHub(hub)
      } catch (error) {
        if (error instanceof Error && i > 0) error.message = `${error.message}; added before it: ${added.slice(0, i).join(' ')}`
        throw error
      }
    })
    return reply(res, 200, { added: added.length })
  }
  if (at === 'POST /names') {
    if (!url.searchParams.has('add') && !url.searchParams.has('remove')) throw new ControlError(400, 'INVALID_INPUT', 'POST /names needs ?add=<name> or ?remove=<name> (each repeatable)', 'add')
    return changeNames(phoenix, target.namesPerNodeMax, res, url.searchParams.getAll('add'), url.searchParams.getAll('remove'))
  }
  // A path served under another method (`curl …/send?name=w2` without a body is a GET): say which.
  const methods = Object.keys(PARAMS).filter((key) => key.endsWith(` ${url.pathname}`)).map((key) => key.split(' ')[0]!)
  if (methods.length > 0) {
    res.setHeader('allow', methods.join(', '))
    return reply(res, 405, { error: 'METHOD_NOT_ALLOWED', message: `${at}: ${url.pathname} takes ${methods.join(', ')}` })
  }
  reply(res, 404, { error: 'NOT_FOUND', message: USAGE })
}

/**
 * `POST /names`: all or nothing. A name another node holds is refused (PhoenixNode.addName), and
 * the answer says which; a name no node can hold, or more names than the node may have, fails the
 * request with nothing changed. Both are checked before any name is added: an added name goes
 * into the node's record (its sequence number moves on, and its neighbours hear of it), so adding
 * and taking back dozens of names was not "nothing changed" to the overlay.
 */
function changeNames(phoenix: PhoenixNode, namesMax: number, res: ServerResponse, adds: readonly string[], removes: readonly string[]): void {
  for (const [what, names] of [['remove', removes], ['add', adds]] as const) {
    for (const name of names) {
      const problem = nameProblem(name)
      if (problem !== undefined) throw new ControlError(400, 'INVALID_INPUT', `${what}: name ${problem}; nothing was changed`, what)
    }
  }
  // The adds come first (a rename never leaves the node without its names), so the peak counts.
  const held = phoenix.names
  const fresh = new Set(adds.filter((name) => !held.includes(name)))
  if (held.length + fresh.size > namesMax) {
    const peak = `${held.length + fresh.size} names (${held.length} held and ${fresh.size} added; removes come after the adds)`
    throw new ControlError(400, 'LIMIT_EXCEEDED', `add: ${peak}, at most ${namesMax} per node (namesPerNodeMax); nothing was changed`, 'add')
  }
  const added: string[] = []
  const refused: string[] = []
  try {
    for (const name of adds) {
      const held = phoenix.names.includes(name)
      if (!phoenix.addName(name)) refused.push(name)
      else if (!held) added.push(name)
    }
  } catch (error) {
    // A refused name is still claimed (it is taken once its holder goes): taken back with the rest.
    for (const name of [...added, ...refused]) phoenix.removeName(name)
    if (error instanceof Error) error.message = `${error.message}; nothing was changed`
    throw error
  }
  for (const name of removes) phoenix.removeName(name)
  reply(res, 200, { names: phoenix.names, refused })
}

/**
 * The control endpoint: plain HTTP on 127.0.0.1 or a unix socket. It answers 503 until `serve`
 * hands it the started node, so it can be bound (and a port or socket conflict reported) before
 * the node joins the network. `endStreams` ends every `GET /messages` stream (at leave).
 */
export function createControlServer(options: { users?: PeerUsers } = {}): { server: Server; serve(target: ControlTarget): void; endStreams(): void } {
  let target: ControlTarget | undefined
  const streams: Streams = { open: new Set(), ended: false }
  const ownUid = process.getuid?.()
  // On a TCP port, every local user can connect: only the node's own user (and root) is served (peer-user.ts).
  const peerUsers = options.users ?? (ownUid === undefined ? undefined : { ownUid })
  const users = peerUsers === undefined ? undefined : new PeerUserGate(peerUsers)
  const server = createServer((req, res) => {
    const refusal = browserRefusal(req, server.address())
    if (refusal !== undefined) {
      req.resume()
      return reply(res, 403, { error: 'FORBIDDEN', message: `a request from a web page (${refusal}) is refused: the control endpoint answers programs on this machine, and a page could otherwise send as this node` })
    }
    if (users === undefined || typeof server.address() !== 'object') return handle(req, res)
    void users.refusal(req.socket).then((other) => {
      if (other === undefined) return handle(req, res)
      req.resume()
      reply(res, 403, { error: 'FORBIDDEN', message: other })
    })
  })
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    if (target === undefined) return reply(res, 503, { error: 'NOT_STARTED', message: 'the node is starting', pid: process.pid })
    route(target, req, res, streams).catch((error: unknown) => {
      if (res.headersSent) return void res.destroy()
      // A refused body may still be arriving: read it away so the client gets the answer, not a reset.
      req.resume()
      if (error instanceof ControlError) return reply(res, error.status, { error: error.code, message: error.message, ...(error.field !== undefined ? { field: error.field } : {}) })
      reply(res, failureStatus(error).status, failureBody(error))
    })
  }
  return {
    server,
    serve: (t) => (target = t),
    endStreams: () => {
      streams.ended = true
      for (const res of streams.open) res.end()
    },
  }
}
