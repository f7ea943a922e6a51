import { spawn } from 'node:child_process'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { NODE_TS_FLAGS } from '../../tools/node-ts.ts'

export const benchDir = resolve(dirname(fileURLToPath(import.meta.url)), '..')

/** Runs one of the bench's commands (`src/<script>`) as its own process, as the README does; its exit code and stderr. */
export async function runBenchScript(script: string, args: readonly string[]): Promise<{ code: number | null; stderr: string }> {
  const stderr: string[] = []
  const child = spawn(process.execPath, [...NODE_TS_FLAGS, join(benchDir, 'src', script), ...args], { cwd: benchDir, stdio: ['ignore', 'pipe', 'pipe'] })
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk.toString()))
  child.stdout.resume()
  const code = await new Promise<number | null>((done) => child.on('exit', done))
  return { code, stderr: stderr.join('') }
}
