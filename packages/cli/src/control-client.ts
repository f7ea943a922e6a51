import { InvalidArgumentError } from 'commander'
import { ConfigError } from './config-error.ts'
import { request, type ClientRequest, type IncomingMessage } from 'node:http'

/** `--control`: a TCP port on 127.0.0.1, or a unix socket path (reachable from other network namespaces). */
export type ControlEndpoint = { port: number } | { socketPath: string }

/**
 * The longest unix socket path the OS takes, in bytes: `sun_path` is 108 bytes on Linux and 104
 * on macOS and the BSDs, the path's terminating NUL included. A longer one fails as EINVAL, and a
 * client's connect then fails before Node's HTTP client listens for it: the error escaped as an
 * uncaught exception with its stack (`phoenix routes --control <a long path>`, found by hand).
 */
export const SOCKET_PATH_BYTES_MAX = process.platform === 'linux' ? 107 : 103

export function parseControl(value: string): ControlEndpoint {
  if (/^\d+$/.test(value)) {
    const port = Number(value)
    if (port < 1 || port > 65535) throw new InvalidArgumentError(`port must be in 1..65535, got ${value}`)
    return { port }
  }
  if (value.length === 0) throw new InvalidArgumentError('give a port number or a unix socket path')
  const bytes = Buffer.byteLength(value)
  if (bytes > SOCKET_PATH_BYTES_MAX) throw new InvalidArgumentError(`a unix socket path is at most ${SOCKET_PATH_BYTES_MAX} bytes (SOCKET_PATH_BYTES_MAX, the OS's limit), and this one is ${bytes}: give a shorter path, e.g. a relative one`)
  return { socketPath: value }
}

/** How the user wrote it: the port or the path. */
export function controlText(endpoint: ControlEndpoint): string {
  return 'port' in endpoint ? String(endpoint.port) : endpoint.socketPath
}

/** Where it is, saying "unix socket": a mistyped port (`--control 74o1`) is a socket path, and the line said only "no node answers on 74o1". */
function where(endpoint: ControlEndpoint): string {
  return 'port' in endpoint ? `127.0.0.1:${endpoint.port}` : `unix socket ${endpoint.socketPath}`
}

function unreachable(endpoint: ControlEndpoint, error: NodeJS.ErrnoException): Error {
  const why =
    error.code === 'ECONNREFUSED' || error.code === 'ENOENT'
      ? `no node answers on ${where(endpoint)} (is \`phoenix node --control ${controlText(endpoint)}\` running?)`
      : `cannot reach ${where(endpoint)}: ${error.message}`
  return new Error(`--control ${controlText(endpoint)}: ${why}`)
}

/** Opens a request to a node's control endpoint and resolves with the response (its body still to read). */
export function openControl(endpoint: ControlEndpoint, method: string, path: string, body?: Uint8Array, timeoutMs?: number): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request({ ...endpoint, ...('port' in endpoint ? { host: '127.0.0.1' } : {}), method, path }, resolve)
    req.on('error', (error: NodeJS.ErrnoException) => reject(unreachable(endpoint, error)))
    if (timeoutMs !== undefined) req.setTimeout(timeoutMs, () => req.destroy(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT' })))
    req.end(body)
  })
}

/**
 * Opens a request whose body the caller writes as it goes (a streaming send): `body` to write to
 * and end, `response` once the node answers (it may answer, e.g. with a failure, before the body
 * ends). A connection failure rejects `response` with the one-line reason.
 */
export function openControlStream(endpoint: ControlEndpoint, method: string, path: string): { body: ClientRequest; response: Promise<IncomingMessage> } {
  let body!: ClientRequest
  const response = new Promise<IncomingMessage>((resolve, reject) => {
    body = request({ ...endpoint, ...('port' in endpoint ? { host: '127.0.0.1' } : {}), method, path, headers: { 'content-type': 'application/octet-stream' } }, resolve)
    body.on('error', (error: NodeJS.ErrnoException) => reject(unreachable(endpoint, error)))
  })
  body.flushHeaders()
  return { body, response }
}

/** Calls a running node's control endpoint and reads the whole answer. */
export async function callControl(endpoint: ControlEndpoint, method: string, path: string, body?: Uint8Array, timeoutMs?: number): Promise<{ status: number; text: string }> {
  const res = await openControl(endpoint, method, path, body, timeoutMs)
  return { status: res.statusCode ?? 0, text: await readAnswer(endpoint, res) }
}

/**
 * Reads a whole answer. A node that dies while answering (or while a `recv` waits for a message)
 * ends the connection mid-answer: Node's reader throws a bare `aborted`, which was all `phoenix
 * recv` said when its node was killed (found by hand); this names the endpoint and what happened.
 */
export async function readAnswer(endpoint: ControlEndpoint, res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  try {
    for await (const chunk of res) chunks.push(chunk as Buffer)
  } catch (error) {
    throw new Error(`--control ${controlText(endpoint)}: the node closed the connection before its answer ended (it stopped or crashed: ${(error as Error).message})`)
  }
  return Buffer.concat(chunks).toString('utf8')
}

/**
 * The error for a failed answer, `line` its one line: a 400 means the node refused a value the
 * command line gave it (a pattern, a name), so running it again unchanged fails the same way:
 * exit status 2, as for any command-line error (config-error.ts). It was 1 (found by hand:
 * `phoenix members ''`). Anything else may pass when retried: 1.
 */
export function answerError(status: number, line: string): Error {
  return status === 400 ? new ConfigError(line) : new Error(line)
}

/** A control endpoint's error answer (`{"error":"NO_ROUTE","message":"…"}`) as one line. */
export function describeFailure(status: number, text: string): string {
  try {
    const body = JSON.parse(text) as { error?: string; message?: string }
    if (body.error !== undefined) return `${body.error}: ${body.message ?? ''}`.trim()
  } catch {
    // Not JSON: fall through to the raw text.
  }
  return `the node answered ${status}: ${text.trim().replace(/\s+/g, ' ').slice(0, 200)}`
}
