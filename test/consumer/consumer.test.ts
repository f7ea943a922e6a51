/**
 * Installable by people outside this repository (issue 15): the packages are built, packed with
 * `pnpm pack` and installed with `npm install` into a fresh project in a temporary directory
 * (their dependencies from the npm registry), then used the three ways a user would:
 * (a) plain JavaScript starts two nodes with the service and exchanges an acknowledged message by
 *     name; (b) the root README's embedding example type-checks under `strict` against the
 *     shipped declarations, and runs; (c) the installed `phoenix` bin answers `--version`, starts
 *     a node and stops on SIGTERM to its pid.
 * The manifest checks at the end read the package.json files only.
 */
import { spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { get } from 'node:http'
import { connect } from 'node:net'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { codeBlocks } from '../docs/readme-examples.ts'
import { PUBLISHED, gitSources, installFresh, repoRoot, run, sameRangeAs, tsc, userEnv, type Installed } from './install.ts'

/** Build, pack and a cold `npm install` take ~30 s on a quiet 2-core machine; times 3 and some for a loaded one. */
const INSTALL_TIMEOUT_MS = 180_000
/** One use of the installed packages: (b)'s type-check of every declaration takes ~10 s quiet, ~20 s loaded; times 3 and some. */
const USE_TIMEOUT_MS = 120_000
/** A node leaves within 5 s of SIGTERM (the CLI's STOP_GRACE_MS); times 3 for a loaded machine. */
const STOP_WAIT_MS = 15_000
/** How often to ask a starting node's control endpoint whether it is up. */
const STATUS_RETRY_MS = 100
/** The heading of the README section whose first ts block is the embedding example. */
const USE_IT_HEADING = '## Use it in your project'

/** The embedding example: the first ts block after the "Use it in your project" heading of the root README. */
function readmeExample(): string {
  const text = readFileSync(join(repoRoot, 'README.md'), 'utf8')
  const headingLine = text.split('\n').indexOf(USE_IT_HEADING) + 1
  expect(headingLine, `README.md has no "${USE_IT_HEADING}" section`).toBeGreaterThan(0)
  const block = codeBlocks('README.md', text).find((b) => b.lang === 'ts' && b.line > headingLine)
  if (block === undefined) throw new Error(`README.md: no ts block after "${USE_IT_HEADING}"`)
  return block.code
}

/** Resolves once `port` on 127.0.0.1 accepts a connection (true) or refuses it (false). */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

/** The node's `GET /status` through its control socket, retried until it answers or `timeoutMs` passes. */
async function statusOf(socketPath: string, timeoutMs: number): Promise<{ version: string; addresses: string[] }> {
  const deadline = performance.now() + timeoutMs
  for (;;) {
    try {
      return await new Promise((resolve, reject) => {
        const request = get({ socketPath, path: '/status' }, (response) => {
          let body = ''
          response.on('data', (d: Buffer) => (body += d.toString('utf8')))
          response.on('end', () => (response.statusCode === 200 ? resolve(JSON.parse(body) as { version: string; addresses: string[] }) : reject(new Error(`GET /status: ${response.statusCode}`))))
        })
        request.on('error', reject)
      })
    } catch (error) {
      if (performance.now() > deadline) throw new Error(`the node's control endpoint did not answer within ${timeoutMs} ms: ${String(error)}`)
      await new Promise((r) => setTimeout(r, STATUS_RETRY_MS))
    }
  }
}

describe('a fresh npm project with the packed packages installed (test/consumer)', () => {
  let installed: Installed

  beforeAll(async () => {
    // The user's own libp2p node, for (a): its modules at the ranges the transport is built against.
    installed = await installFresh('consumer', ['libp2p', '@libp2p/tcp', '@chainsafe/libp2p-noise', '@chainsafe/libp2p-yamux'].map((name) => sameRangeAs('transport', name)))
    const sizes = installed.tarballs.map((t) => `${t.file.split('/').pop()} ${(t.bytes / 1024).toFixed(1)} KiB`).join(', ')
    console.log(`consumer: build ${Math.round(installed.buildMs)} ms, pack ${Math.round(installed.packMs)} ms, npm install ${Math.round(installed.installMs)} ms; ${sizes}`)
  }, INSTALL_TIMEOUT_MS)

  afterAll(() => {
    if (installed !== undefined) rmSync(dirname(installed.project), { recursive: true, force: true })
  })

  it('takes every dependency from the registry, none from git or GitHub', () => {
    expect(gitSources(installed.project)).toEqual([])
  })

  it('each installed package is built JavaScript with declarations and maps, its sources beside them, no tests, no workspace ranges', () => {
    for (const dir of PUBLISHED) {
      const name = manifestOf(dir).name
      const root = join(installed.project, 'node_modules', ...name.split('/'))
      const files = new Set(listFiles(root).map((f) => f.slice(root.length + 1)))
      const entry = name === '@phoenix-overlay/cli' ? 'main' : 'index'
      for (const f of [`dist/${entry}.js`, `dist/${entry}.js.map`, `dist/${entry}.d.ts`, `dist/${entry}.d.ts.map`, `src/${entry}.ts`, 'package.json', 'README.md']) expect(files.has(f), `${name}: ${f}`).toBe(true)
      expect([...files].filter((f) => /(^|\/)test\/|\.test\.|tsbuildinfo/.test(f)), name).toEqual([])
      const text = readFileSync(join(root, 'package.json'), 'utf8')
      expect(text, name).not.toContain('workspace:')
      expect(text, name).not.toContain('./src/')
    }
    // One `phoenix` command: the umbrella's, not the CLI package's in-repo shell script.
    expect(realpathSync(join(installed.project, 'node_modules', '.bin', 'phoenix'))).toBe(realpathSync(join(installed.project, 'node_modules', 'phoenix-overlay', 'bin', 'phoenix.js')))
  })

  it('(a) plain JavaScript: two nodes with the service exchange an acknowledged message by name', async () => {
    const file = join(installed.project, 'two-nodes.mjs')
    writeFileSync(
      file,
      `import { createPhoenixLibp2p, phoenix, PhoenixTransportError, PhoenixError } from 'phoenix-overlay'
import { createLibp2p } from 'libp2p'
import { tcp } from '@libp2p/tcp'
import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'

// One node from the helper, the other a plain libp2p node with the service added.
const hub = await createPhoenixLibp2p({ listen: ['/ip4/127.0.0.1/tcp/0'], names: ['rank-0'] })
const worker = await createLibp2p({
  addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
  transports: [tcp()], connectionEncrypters: [noise()], streamMuxers: [yamux()],
  services: { phoenix: phoenix({ names: ['rank-1'], hubs: hub.libp2p.getMultiaddrs().map(String) }) },
})
const received = new Promise((resolve) => hub.phoenix.addEventListener('message', (e) => resolve(e.detail)))
await worker.services.phoenix.send('rank-0', new TextEncoder().encode('hello'), { ack: true })
const m = await received
const unknown = await worker.services.phoenix.send('nobody', new Uint8Array(1), { routeWaitMs: 200 }).catch((e) => e)
console.log(JSON.stringify({ name: m.name, text: new TextDecoder().decode(m.payload), from: m.from, worker: worker.peerId.toString(),
  noRoute: unknown instanceof PhoenixTransportError ? unknown.code : String(unknown), coreError: typeof PhoenixError }))
await worker.stop(); await hub.libp2p.stop()
`,
    )
    const { stdout } = await run(process.execPath, [file], installed.project, USE_TIMEOUT_MS)
    const out = JSON.parse(stdout.trim().split('\n').pop()!) as Record<string, string>
    expect(out).toEqual({ name: 'rank-0', text: 'hello', from: out.worker, worker: out.worker, noRoute: 'NO_ROUTE', coreError: 'function' })
  }, USE_TIMEOUT_MS)

  it("(b) the README's embedding example type-checks under strict against the shipped declarations, and runs", async () => {
    const example = readmeExample()
    expect(example).toContain("from 'phoenix-overlay'")
    writeFileSync(join(installed.project, 'example.ts'), example)
    writeFileSync(
      join(installed.project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          target: 'ES2023',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          // libp2p's declarations (main-event's) name DOM event types, CustomEventInit and
          // AddEventListenerOptions: with `lib` ES2023 alone they fail unless skipLibCheck is on.
          lib: ['ES2023', 'DOM'],
          noEmit: true,
          // Every declaration file is checked, ours and every dependency's.
          skipLibCheck: false,
          // The user's own @types/node; here the workspace's, rather than a second download.
          typeRoots: [join(repoRoot, 'node_modules', '@types')],
          types: ['node'],
        },
        files: ['example.ts'],
      }),
    )
    const checked = await tsc(['-p', 'tsconfig.json', '--pretty', 'false'], installed.project)
    expect(checked.stdout, 'tsc found errors').toBe('')
    expect(checked.code).toBe(0)
    // Node 24 strips the types of a .ts file outside node_modules, so the example runs as written.
    const { stdout } = await run(process.execPath, ['example.ts'], installed.project, USE_TIMEOUT_MS)
    expect(stdout).toMatch(/rank-0 got "hello"/)
  }, USE_TIMEOUT_MS)

  it('(c) the installed phoenix bin answers --version, starts a node, and stops on SIGTERM to its pid', async () => {
    const bin = join(installed.project, 'node_modules', '.bin', 'phoenix')
    const umbrella = JSON.parse(readFileSync(join(installed.project, 'node_modules', 'phoenix-overlay', 'package.json'), 'utf8')) as { version: string }
    const version = await run(bin, ['--version'], installed.project, 30_000)
    expect(version.stdout.trim()).toBe(umbrella.version)

    // Spawned as the user's shell would: the kernel reads `#!/usr/bin/env node`, env execs Node.
    const control = join(installed.project, 'control.sock')
    const node = spawn(bin, ['node', '--listen', '/ip4/127.0.0.1/tcp/0', '--control', control], { cwd: installed.project, env: userEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    node.stdout.on('data', (d: Buffer) => (output += d.toString('utf8')))
    node.stderr.on('data', (d: Buffer) => (output += d.toString('utf8')))
    const exited = new Promise<number | null>((resolve) => node.on('exit', (code) => resolve(code)))
    try {
      // Ready once the control endpoint answers, with the version and listen address.
      const status = await statusOf(control, STOP_WAIT_MS)
      expect(status.version).toBe(umbrella.version)
      const port = Number(/\/ip4\/127\.0\.0\.1\/tcp\/(\d+)/.exec(status.addresses.join(' '))?.[1])
      // The pid we hold is Node's own, no shell or shim between: the signal reaches it.
      expect(realpathSync(readlinkSync(`/proc/${node.pid}/exe`))).toBe(realpathSync(process.execPath))
      expect(await accepts(port)).toBe(true)
      const sent = performance.now()
      process.kill(node.pid!, 'SIGTERM')
      const code = await Promise.race([exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), STOP_WAIT_MS))])
      expect(code, output).toBe(0)
      expect(output).toMatch(/\bleft\b/)
      expect(await accepts(port)).toBe(false)
      expect(() => process.kill(node.pid!, 0)).toThrow(/ESRCH/)
      console.log(`consumer: phoenix node left ${Math.round(performance.now() - sent)} ms after SIGTERM`)
    } finally {
      if (node.exitCode === null && node.signalCode === null) node.kill('SIGKILL')
    }
  }, USE_TIMEOUT_MS)
})

interface Manifest {
  name: string
  version: string
  private?: boolean
  license?: string
  engines?: { node?: string }
  sideEffects?: unknown
  files?: string[]
  exports?: Record<string, string>
  dependencies?: Record<string, string>
  publishConfig?: { exports?: Record<string, { types: string; import: string }> }
}

const manifestOf = (dir: string): Manifest => JSON.parse(readFileSync(join(repoRoot, 'packages', dir, 'package.json'), 'utf8')) as Manifest

/** Every file under a directory. */
function listFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? listFiles(join(dir, e.name)) : [join(dir, e.name)]))
}

/** The packages a package's sources import (`pkg` or `@scope/pkg`, subpaths and `node:` built-ins left out). */
function importedPackages(dir: string): string[] {
  const found = new Set<string>()
  for (const file of listFiles(join(repoRoot, 'packages', dir, 'src')).filter((f) => f.endsWith('.ts'))) {
    // Imports in comments (a usage line in a doc comment) are not imports.
    const code = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '')
    for (const m of code.matchAll(/(?:\bfrom|\bimport\()\s*'([^'.][^']*)'/g)) {
      const spec = m[1]!
      // node: built-ins, and paths a browser page fetches from our own server (the overlay page's script).
      if (spec.startsWith('node:') || spec.startsWith('/')) continue
      found.add(spec.split('/').slice(0, spec.startsWith('@') ? 2 : 1).join('/'))
    }
  }
  return [...found].sort()
}

describe('the published manifests (packages/*/package.json)', () => {
  it('every other workspace package is private, so `pnpm -r publish` publishes exactly these', () => {
    const dirs = [...readdirSync(join(repoRoot, 'packages')).map((d) => `packages/${d}`), 'test', 'bench', 'simulations', ...readdirSync(join(repoRoot, 'examples')).map((d) => `examples/${d}`)]
    const published = new Set<string>(PUBLISHED.map((d) => `packages/${d}`))
    const others = dirs.filter((d) => !published.has(d) && existsSync(join(repoRoot, d, 'package.json')))
    expect(others.length).toBeGreaterThan(0)
    for (const d of others) expect((JSON.parse(readFileSync(join(repoRoot, d, 'package.json'), 'utf8')) as Manifest).private, d).toBe(true)
  })

  it('all share one version (released together; see CHANGELOG.md)', () => {
    expect(new Set(PUBLISHED.map((dir) => manifestOf(dir).version)).size).toBe(1)
  })

  for (const dir of PUBLISHED) {
    it(`${dir}: publishable, with built exports for every source export, and every import a dependency`, () => {
      const m = manifestOf(dir)
      expect(m.private, 'a private package cannot be published').toBeUndefined()
      expect(m.license).toBe('MIT')
      expect(m.engines?.node).toBe('>=22')
      expect(m.sideEffects).toBeDefined()
      expect(m.files).toContain('dist')
      // In the repository `exports` name the TypeScript sources (tsx, vitest); `pnpm pack` puts
      // `publishConfig.exports` in their place. An entry point added to one only fails here.
      const expected = Object.fromEntries(
        Object.entries(m.exports ?? {}).map(([entry, source]) => {
          const stem = source.replace(/^\.\/src\//, './dist/').replace(/\.ts$/, '')
          return [entry, { types: `${stem}.d.ts`, import: `${stem}.js` }]
        }),
      )
      expect(m.publishConfig?.exports, `packages/${dir}/package.json: publishConfig.exports must be the built twin of every entry in exports`).toEqual(expected)
      // A module imported at run time but only a devDependency works here (pnpm installs it) and
      // breaks for a user; tsx must never be needed by what a user installs.
      const dependencies = Object.keys(m.dependencies ?? {})
      expect(importedPackages(dir).filter((p) => !dependencies.includes(p))).toEqual([])
      expect(dependencies).not.toContain('tsx')
    })
  }
})
