/**
 * What a user outside this repository does, done in a temporary directory: build the packages,
 * `pnpm pack` them, create a fresh npm project and `npm install` the tarballs (their own
 * dependencies come from the npm registry). Shared by the consumer test and the start-up
 * benchmark (`startup.ts`). Everything runs on the workspace's Node 24 (`process.execPath`, the
 * `node` devDependency's real binary): its directory goes first on PATH, so `npm`, `npx` and
 * every `#!/usr/bin/env node` script find that Node and exec it.
 */
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url))

/** The packages a user may install, in `packages/<dir>`; the umbrella `phoenix-overlay` depends on the rest. */
export const PUBLISHED = ['core', 'wire', 'sim', 'transport', 'cli', 'phoenix-overlay'] as const

/** One command may take this long (a cold `npm install` fetches about 100 packages from the registry). */
const COMMAND_TIMEOUT_MS = 180_000
/** Output kept for an error message. */
const OUTPUT_TAIL_CHARS = 4_000

/**
 * The environment of a user's shell: this Node first on PATH, and none of the `npm_*`/`pnpm_*`
 * variables a package manager running this test exports (they would configure the user's npm).
 */
export function userEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env)) if (!/^(npm|pnpm)_/i.test(key)) env[key] = value
  env.PATH = `${dirname(process.execPath)}:${process.env.PATH ?? ''}`
  env.FORCE_COLOR = '0'
  return env
}

export interface Ran {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
  readonly ms: number
}

/** Runs a command to its end, whatever its exit code (a command that hangs is killed after `timeoutMs`). */
export function runAny(command: string, args: readonly string[], cwd: string, timeoutMs = COMMAND_TIMEOUT_MS): Promise<Ran> {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: userEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')))
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr, ms: performance.now() - started })
    })
  })
}

/** Runs a command to its end; rejects, with its output, unless it exits 0. */
export async function run(command: string, args: readonly string[], cwd: string, timeoutMs = COMMAND_TIMEOUT_MS): Promise<Ran> {
  const r = await runAny(command, args, cwd, timeoutMs)
  if (r.code !== 0) throw new Error(`${command} ${args.join(' ')} (in ${cwd}) exited ${r.code ?? 'on a signal'} after ${Math.round(r.ms)} ms:\n${(r.stdout + r.stderr).slice(-OUTPUT_TAIL_CHARS)}`)
  return r
}

/** The workspace's TypeScript compiler, run by this Node. */
export function tsc(args: readonly string[], cwd: string): Promise<Ran> {
  return runAny(process.execPath, [join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc'), ...args], cwd)
}

export interface Tarball {
  readonly file: string
  readonly bytes: number
}

export interface Installed {
  /** The fresh project: package.json, node_modules and nothing else. */
  readonly project: string
  readonly tarballs: readonly Tarball[]
  readonly buildMs: number
  readonly packMs: number
  readonly installMs: number
}

/** Builds every published package (tsc project references, tsconfig.build.json) to its dist/. */
export async function build(): Promise<number> {
  const r = await tsc(['-b', 'tsconfig.build.json'], repoRoot)
  if (r.code !== 0) throw new Error(`tsc -b tsconfig.build.json failed:\n${r.stdout.slice(-OUTPUT_TAIL_CHARS)}`)
  return r.ms
}

/** `pnpm pack`s the published packages into `into`: pnpm applies each `publishConfig` and turns `workspace:*` into the version. */
export async function pack(into: string): Promise<{ tarballs: Tarball[]; ms: number }> {
  const filters = PUBLISHED.flatMap((p) => ['--filter', `./packages/${p}`])
  const { ms } = await run('npx', ['-y', 'pnpm@10', '--recursive', ...filters, 'pack', '--pack-destination', into], repoRoot)
  const tarballs = readdirSync(into)
    .filter((f) => f.endsWith('.tgz'))
    .sort()
    .map((f) => ({ file: join(into, f), bytes: statSync(join(into, f)).size }))
  if (tarballs.length !== PUBLISHED.length) throw new Error(`pnpm pack made ${tarballs.length} tarballs in ${into}, expected ${PUBLISHED.length}`)
  return { tarballs, ms }
}

/** A new npm project in `dir` with the tarballs installed (`cacheDir`: npm's cache, e.g. an empty one for a cold install); returns how long `npm install` took. */
export async function npmInstall(dir: string, tarballs: readonly Tarball[], options: { cacheDir?: string; alsoFromRegistry?: readonly string[] } = {}): Promise<number> {
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name: 'phoenix-consumer', version: '1.0.0', private: true, type: 'module' }, null, 2)}\n`)
  const cache = options.cacheDir === undefined ? [] : ['--cache', options.cacheDir]
  const args = ['install', '--no-audit', '--no-fund', '--loglevel=error', ...cache, ...tarballs.map((t) => t.file), ...(options.alsoFromRegistry ?? [])]
  return (await run('npm', args, dir)).ms
}

/** `name@range` as `packages/<dir>` depends on it: what a user adds to put the service in a libp2p node of their own. */
export function sameRangeAs(dir: string, name: string): string {
  const manifest = JSON.parse(readFileSync(join(repoRoot, 'packages', dir, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> }
  const range = manifest.dependencies?.[name]
  if (range === undefined) throw new Error(`packages/${dir}/package.json does not depend on ${name}`)
  return `${name}@${range}`
}

/** Build, pack and `npm install` into a new temporary project (with `alsoFromRegistry`, e.g. `libp2p@^3`); returns where, and what each step took. */
export async function installFresh(label: string, alsoFromRegistry: readonly string[] = []): Promise<Installed> {
  const root = mkdtempSync(join(tmpdir(), `phoenix-${label}-`))
  const packs = join(root, 'tarballs')
  const project = join(root, 'project')
  mkdirSync(packs)
  const buildMs = await build()
  const { tarballs, ms: packMs } = await pack(packs)
  const installMs = await npmInstall(project, tarballs, { alsoFromRegistry })
  return { project, tarballs, buildMs, packMs, installMs }
}

/**
 * Every package in the project's lockfile fetched from git or GitHub rather than from a registry
 * (npm may leave registry URLs out of the lockfile, `omit-lockfile-registry-resolved`; a git
 * source is always written).
 */
export function gitSources(project: string): string[] {
  const lock = JSON.parse(readFileSync(join(project, 'package-lock.json'), 'utf8')) as { packages: Record<string, { resolved?: string; version?: string }> }
  const fromGit = (s: string | undefined) => s !== undefined && /^(git\+|git:|github:)|github\.com|githubusercontent\.com/.test(s)
  return Object.entries(lock.packages)
    .filter(([, p]) => fromGit(p.resolved) || fromGit(p.version))
    .map(([path, p]) => `${path}: ${p.resolved ?? p.version}`)
}
