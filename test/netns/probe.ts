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

/** Connects from inside a namespace; prints {ok, ms, code, data} (the first bytes received). A dropped SYN shows as code TIMEOUT. */
export function connectScript(host: string, port: number, timeoutMs: number): string {
  return `import net from 'node:net'
const started = performance.now()
const done = (ok, code, data) => { console.log(JSON.stringify({ ok, code, ms: Math.round(performance.now() - started), data })); process.exit(0) }
const socket = net.connect({ host: ${JSON.stringify(host)}, port: ${port} })
socket.setTimeout(${timeoutMs}, () => done(false, 'TIMEOUT'))
socket.on('data', (d) => done(true, 'CONNECTED', d.toString('utf8').trim()))
socket.on('error', (e) => done(false, e.code))`
}

/** TCP listeners in `ns` on `host` at each of `ports`, answering every connection with the address it came from. */
export function whoAmIScript(host: string, ports: readonly number[]): string {
  return `import net from 'node:net'
let up = 0
for (const port of ${JSON.stringify(ports)}) {
  net.createServer((socket) => socket.end(socket.remoteAddress.replace(/^::ffff:/, ''))).listen(port, ${JSON.stringify(host)}, () => ++up === ${ports.length} && console.log('listening'))
}
setTimeout(() => process.exit(0), 120_000)`
}

/** Counts the bytes of one connection to \`host:port\`; prints {bytes, ms} (first byte to end) and exits. */
export function sinkScript(host: string, port: number): string {
  return `import net from 'node:net'
const server = net.createServer((socket) => {
  let bytes = 0, first
  socket.on('data', (d) => { first ??= performance.now(); bytes += d.length })
  socket.on('end', () => { console.log(JSON.stringify({ bytes, ms: performance.now() - first })); process.exit(0) })
})
server.listen(${port}, ${JSON.stringify(host)}, () => console.log('listening'))
setTimeout(() => process.exit(1), 60_000)`
}

/** Sends \`bytes\` zero bytes to \`host:port\` and closes. */
export function sourceScript(host: string, port: number, bytes: number): string {
  return `import net from 'node:net'
const socket = net.connect({ host: ${JSON.stringify(host)}, port: ${port} }, () => socket.end(Buffer.alloc(${bytes})))
socket.on('close', () => process.exit(0))
socket.on('error', (e) => { console.error(e.message); process.exit(1) })`
}
