import { execFile } from 'node:child_process'

/** Runs a small Node script inside network namespace `ns` and returns what it printed. */
export function runInNamespace(ns: string, script: string, timeoutMs = 20_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('ip', ['netns', 'exec', ns, process.execPath, '--input-type=module', '-e', script], { timeout: timeoutMs }, (error, stdout, stderr) => {
      if (error) reject(new Error(`in ${ns}: ${stderr || error.message}`))
      else resolve(stdout.trim())
    })
  })
}

/** A TCP listener in `ns` on `host:port` that stays up until the namespace's processes are killed. */
export function listenScript(host: string, port: number): string {
  return `import net from 'node:net'
const server = net.createServer((socket) => socket.end('hello'))
server.listen(${port}, ${JSON.stringify(host)}, () => console.log('listening'))
setTimeout(() => process.exit(0), 120_000)`
}

/** Connects from inside a namespace; prints {ok, ms, code}. A dropped SYN shows as code TIMEOUT. */
export function connectScript(host: string, port: number, timeoutMs: number): string {
  return `import net from 'node:net'
const started = performance.now()
const done = (ok, code) => { console.log(JSON.stringify({ ok, code, ms: Math.round(performance.now() - started) })); process.exit(0) }
const socket = net.connect({ host: ${JSON.stringify(host)}, port: ${port} })
socket.setTimeout(${timeoutMs}, () => done(false, 'TIMEOUT'))
socket.on('data', () => done(true, 'CONNECTED'))
socket.on('error', (e) => done(false, e.code))`
}
