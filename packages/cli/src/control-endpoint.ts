import { chmodSync, lstatSync, unlinkSync } from 'node:fs'
import type { Server } from 'node:http'
import { dirname } from 'node:path'
import { ConfigError } from './config-error.ts'
import { CONTROL_PROBE_TIMEOUT_MS } from './constants.ts'
import { callControl, controlText, type ControlEndpoint } from './control-client.ts'
import { LockHeldError, PidLock } from './key-lock.ts'

/** Asks whatever answers on the endpoint for its pid; undefined when nothing answers as a phoenix node does. */
async function probePid(endpoint: ControlEndpoint): Promise<number | undefined> {
  try {
    // A node answers 200 with its status, or 503 while it starts; both name its pid.
    const { text } = await callControl(endpoint, 'GET', '/status', undefined, CONTROL_PROBE_TIMEOUT_MS)
    const pid = (JSON.parse(text) as { pid?: unknown }).pid
    return typeof pid === 'number' ? pid : undefined
  } catch {
    return undefined
  }
}

/** True when something accepts connections on the socket (it may be hung: then it is still not ours to remove). */
async function socketAnswers(endpoint: { socketPath: string }): Promise<boolean> {
  try {
    await callControl(endpoint, 'GET', '/status', undefined, CONTROL_PROBE_TIMEOUT_MS)
    return true
  } catch (error) {
    return !/no node answers/.test((error as Error).message)
  }
}

function listen(server: Server, endpoint: ControlEndpoint): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    const done = () => {
      server.off('error', reject)
      resolve()
    }
    if ('port' in endpoint) server.listen(endpoint.port, '127.0.0.1', done)
    else server.listen(endpoint.socketPath, done)
  })
}

async function bindPort(server: Server, endpoint: { port: number }): Promise<void> {
  try {
    await listen(server, endpoint)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code !== 'EADDRINUSE') throw new ConfigError(`--control ${endpoint.port}: cannot listen on 127.0.0.1:${endpoint.port} (${(error as Error).message})`)
    const pid = await probePid(endpoint)
    throw new Error(`--control ${endpoint.port}: 127.0.0.1:${endpoint.port} is in use ${pid !== undefined ? `by phoenix node pid ${pid}` : 'by another program'}`)
  }
}

function lockSocket(socketPath: string): PidLock {
  try {
    return PidLock.acquire(`${socketPath}.lock`)
  } catch (error) {
    if (error instanceof LockHeldError) throw new Error(`--control ${socketPath}: in use by phoenix node pid ${error.holder.pid}`)
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT') throw new ConfigError(`--control ${socketPath}: directory ${dirname(socketPath)} does not exist`)
    throw new Error(`--control ${socketPath}: cannot lock the socket (${(error as Error).message})`)
  }
}

/**
 * Serves `server` on the endpoint and returns how to give it back. A unix socket is guarded by a
 * lock file beside it (`<socket>.lock`, naming the holder's pid): a socket that a live node holds
 * or answers on is never removed or taken over, while one left by a crashed node is replaced.
 */
export async function bindControl(server: Server, endpoint: ControlEndpoint): Promise<{ release(): void }> {
  if ('port' in endpoint) {
    await bindPort(server, endpoint)
    return { release: () => server.close() }
  }
  const { socketPath } = endpoint
  const lock = lockSocket(socketPath)
  try {
    const existing = lstatSync(socketPath, { throwIfNoEntry: false })
    if (existing !== undefined && !existing.isSocket()) throw new ConfigError(`--control ${socketPath}: exists and is not a socket`)
    if (existing !== undefined) {
      // A lockless node (an older phoenix) may still serve it: probe before removing what a crash left.
      if (await socketAnswers(endpoint)) throw new Error(`--control ${socketPath}: a live process answers on this socket (pid ${(await probePid(endpoint)) ?? 'unknown'})`)
      unlinkSync(socketPath)
    }
    await listen(server, endpoint).catch((error: Error) => {
      throw new ConfigError(`--control ${controlText(endpoint)}: cannot listen (${error.message})`)
    })
    // Only the node's user may connect (connecting needs write permission): whoever can use the
    // endpoint sends as the node and takes its messages (peer-user.ts says the same of a TCP port).
    // The server answers nothing but 503 until the node is served, so the moment before is harmless.
    chmodSync(socketPath, 0o600)
  } catch (error) {
    lock.release()
    throw error
  }
  let released = false
  return {
    release: () => {
      if (released) return
      released = true
      server.close()
      // We hold the lock, so the socket file is ours; remove it before the lock says it is free.
      try {
        unlinkSync(socketPath)
      } catch {
        // Already gone.
      }
      lock.release()
    },
  }
}
