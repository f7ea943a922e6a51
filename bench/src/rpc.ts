/**
 * How the driver talks to bench nodes: a node in a child process of its own (Node's IPC channel,
 * structured-clone serialization so bigints pass), or a node in the driver's own process (the
 * in-process variant). Both look the same to the driver.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { BenchNode, type MethodName, type NodeMethods } from './bench-node.ts'
import { NODE_TS_FLAGS } from '../../tools/node-ts.ts'

export interface NodeHandle {
  readonly label: string
  /** The OS process the node runs in (the driver's own for an in-process node). */
  readonly pid: number
  call<M extends MethodName>(method: M, ...params: Parameters<NodeMethods[M]>): Promise<Awaited<ReturnType<NodeMethods[M]>>>
  /** Stops the node and, for a child, ends its process (which writes its CPU profile, if any). */
  close(): Promise<void>
}

export interface Request {
  readonly id: number
  readonly method: MethodName | 'exit'
  readonly params: unknown
}

export type Reply = { readonly id: number; readonly result: unknown } | { readonly id: number; readonly error: string }

/** Calls a method of `node` by name (the child's side of the protocol, and the in-process path). */
export async function invoke(node: BenchNode, method: MethodName, params: unknown): Promise<unknown> {
  const fn = node[method] as (p: unknown) => unknown
  return fn.call(node, params)
}

export function localNode(label: string): NodeHandle {
  const node = new BenchNode()
  return {
    label,
    pid: process.pid,
    call: (async (method: MethodName, params?: unknown) => invoke(node, method, params)) as NodeHandle['call'],
    close: () => node.stop(),
  }
}

const NODE_MAIN = fileURLToPath(new URL('./node-main.ts', import.meta.url))
const CHILD_EXIT_WAIT_MS = 10_000

/**
 * Starts a node in a process of its own: `process.execPath` itself (the real Node binary, so the
 * pid held is the node's, not a launcher's) on Node's own TypeScript transform (`NODE_TS_FLAGS`), and waits for it to say it is ready.
 * `nodeMain` is another tree's bench/src/node-main.ts to run that tree's code (a baseline checkout).
 */
export async function spawnNode(label: string, nodeArgs: readonly string[] = [], nodeMain = NODE_MAIN): Promise<NodeHandle> {
  const child: ChildProcess = spawn(process.execPath, [...nodeArgs, ...NODE_TS_FLAGS, nodeMain], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], serialization: 'advanced' })
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>()
  let nextId = 1
  let exited: Error | undefined
  const exitedPromise = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exited = new Error(`bench node ${label} (pid ${child.pid}) exited (code ${code}, signal ${signal})`)
      for (const { reject } of pending.values()) reject(exited)
      pending.clear()
      resolve()
    }),
  )
  child.on('message', (message: Reply | { ready: true }) => {
    if ('ready' in message) return
    const waiter = pending.get(message.id)
    pending.delete(message.id)
    if ('error' in message) waiter?.reject(new Error(`${label}: ${message.error}`))
    else waiter?.resolve(message.result)
  })
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve())
    child.once('exit', () => reject(exited))
  })
  const request = (method: Request['method'], params: unknown): Promise<unknown> => {
    if (exited !== undefined) return Promise.reject(exited)
    const id = nextId++
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject })
      child.send({ id, method, params } satisfies Request)
    })
  }
  return {
    label,
    pid: child.pid!,
    call: ((method: MethodName, params?: unknown) => request(method, params)) as NodeHandle['call'],
    async close() {
      if (exited !== undefined) return
      await request('exit', undefined).catch(() => undefined)
      const timer = setTimeout(() => child.kill('SIGKILL'), CHILD_EXIT_WAIT_MS)
      await exitedPromise
      clearTimeout(timer)
    },
  }
}
