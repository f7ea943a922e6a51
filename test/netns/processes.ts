import { spawn, type ChildProcess } from 'node:child_process'

/** Lines kept per process: enough to explain a failure, bounded so 30 chatty nodes cannot fill memory. */
const OUTPUT_LINES_MAX = 400

export interface NamespaceProcess {
  readonly namespace: string
  readonly child: ChildProcess
  /** The last OUTPUT_LINES_MAX lines of stdout and stderr. */
  readonly output: string[]
  /** Resolves with the first line matching `pattern`, rejects after `timeoutMs` or if the process exits first. */
  waitForLine(pattern: RegExp, timeoutMs: number): Promise<string>
  kill(signal?: NodeJS.Signals): Promise<void>
}

/** Runs `command` inside network namespace `namespace`, keeping the tail of its output. */
export function startInNamespace(namespace: string, command: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): NamespaceProcess {
  const child = spawn('ip', ['netns', 'exec', namespace, command, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  const output: string[] = []
  const waiters: { pattern: RegExp; resolve: (line: string) => void }[] = []
  const onData = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (line === '') continue
      output.push(line)
      if (output.length > OUTPUT_LINES_MAX) output.shift()
      for (const waiter of [...waiters]) {
        if (waiter.pattern.test(line)) {
          waiters.splice(waiters.indexOf(waiter), 1)
          waiter.resolve(line)
        }
      }
    }
  }
  child.stdout!.on('data', onData)
  child.stderr!.on('data', onData)
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  return {
    namespace,
    child,
    output,
    waitForLine(pattern, timeoutMs) {
      const seen = output.find((line) => pattern.test(line))
      if (seen !== undefined) return Promise.resolve(seen)
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${namespace}: no line matching ${pattern} within ${timeoutMs} ms; last output:\n${output.slice(-20).join('\n')}`)), timeoutMs)
        waiters.push({ pattern, resolve: (line) => (clearTimeout(timer), resolve(line)) })
        void exited.then((code) => {
          clearTimeout(timer)
          reject(new Error(`${namespace}: exited with ${code} before printing ${pattern}; last output:\n${output.slice(-20).join('\n')}`))
        })
      })
    },
    async kill(signal = 'SIGKILL') {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill(signal)
      await exited
    },
  }
}
