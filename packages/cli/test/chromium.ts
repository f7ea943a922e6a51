/**
 * Headless Chromium (Debian's `/usr/bin/chromium`) driven over the DevTools protocol with Node's
 * own WebSocket: open a page, evaluate expressions in it. Started in its own process group with a
 * fresh profile, so `close()` ends every process it started.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export const CHROMIUM = '/usr/bin/chromium'
const START_MS = 30_000

export class Chromium {
  private nextId = 1
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>()

  private constructor(
    private readonly child: ChildProcess,
    private readonly profile: string,
    private readonly socket: WebSocket,
  ) {
    socket.addEventListener('message', (event) => {
      const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown; error?: { message: string } }
      const waiting = message.id === undefined ? undefined : this.pending.get(message.id)
      if (waiting === undefined) return
      this.pending.delete(message.id!)
      if (message.error) waiting.reject(new Error(message.error.message))
      else waiting.resolve(message.result)
    })
  }

  /** Starts Chromium on `url` and connects to that page. */
  static async open(url: string): Promise<Chromium> {
    const profile = mkdtempSync(join(tmpdir(), 'phoenix-chromium-'))
    const args = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', `--user-data-dir=${profile}`, '--remote-debugging-port=0', url]
    const child = spawn(CHROMIUM, args, { stdio: ['ignore', 'ignore', 'pipe'], detached: true })
    let stderr = ''
    const browserUrl = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`chromium did not start within ${START_MS} ms: ${stderr.slice(-500)}`)), START_MS)
      child.stderr!.on('data', (chunk: Buffer) => {
        stderr += chunk.toString()
        const match = /DevTools listening on (ws:\/\/\S+)/.exec(stderr)
        if (match) (clearTimeout(timer), resolve(match[1]!))
      })
      child.once('exit', (code) => (clearTimeout(timer), reject(new Error(`chromium exited (${code}): ${stderr.slice(-500)}`))))
    })
    const http = browserUrl.replace(/^ws:/, 'http:').replace(/\/devtools\/.*$/, '')
    let pageUrl: string | undefined
    for (let i = 0; i < 100 && pageUrl === undefined; i++) {
      const targets = (await (await fetch(`${http}/json/list`)).json()) as { type: string; webSocketDebuggerUrl: string }[]
      pageUrl = targets.find((t) => t.type === 'page')?.webSocketDebuggerUrl
      if (pageUrl === undefined) await new Promise((r) => setTimeout(r, 100))
    }
    if (pageUrl === undefined) throw new Error('chromium opened no page')
    const socket = new WebSocket(pageUrl)
    await new Promise((resolve, reject) => (socket.addEventListener('open', resolve), socket.addEventListener('error', reject)))
    return new Chromium(child, profile, socket)
  }

  /** Sends one DevTools protocol command to the page and resolves to its result. */
  call(method: string, params: object): Promise<unknown> {
    const id = this.nextId++
    this.socket.send(JSON.stringify({ id, method, params }))
    return new Promise((resolve, reject) => this.pending.set(id, { resolve, reject }))
  }

  /** The value of `expression` in the page (JSON-serialisable), awaiting a promise. */
  async evaluate<T>(expression: string): Promise<T> {
    const result = (await this.call('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true })) as { result: { value: T }; exceptionDetails?: { text: string; exception?: { description?: string } } }
    if (result.exceptionDetails) throw new Error(`${expression}: ${result.exceptionDetails.exception?.description ?? result.exceptionDetails.text}`)
    return result.result.value
  }

  /** Evaluates `expression` until `check` accepts its value. */
  async until<T>(expression: string, check: (value: T) => boolean, timeoutMs: number): Promise<T> {
    const started = performance.now()
    for (;;) {
      const value = await this.evaluate<T>(expression).catch(() => undefined as T)
      if (value !== undefined && check(value)) return value
      if (performance.now() - started > timeoutMs) throw new Error(`${expression} stayed ${JSON.stringify(value)} for ${timeoutMs} ms`)
      await new Promise((r) => setTimeout(r, 100))
    }
  }

  close(): void {
    this.socket.close()
    try {
      process.kill(-this.child.pid!, 'SIGKILL') // its own process group: the browser and its helpers
    } catch {
      // already gone
    }
    rmSync(this.profile, { recursive: true, force: true })
  }
}
