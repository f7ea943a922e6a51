/**
 * Same seed, same bytes: runs every scenario in `scenarios/` (at 400 processes) and a few
 * variants that reach the rest of the simulator (the baselines, naive DSDV, signed records, leave,
 * join, link failure), and compares each result file, byte for byte, with the one kept in
 * `fixtures/identity/`. A refactoring that changes no behaviour must pass it unchanged.
 *
 *   npx pnpm@10 --filter @phoenix-overlay/simulations run identity              # every case (~3 min)
 *   npx pnpm@10 --filter @phoenix-overlay/simulations run identity -- --quick   # the small cases (seconds)
 *   ... run identity -- --only paper-3-subnets@400                              # one case
 *   ... run identity -- --write                                                 # regenerate the fixtures (only after a deliberate change of behaviour)
 *
 * Exit 0: every case matched. Exit 1: a summary of each difference (first differing line).
 * Besides the result file, each case keeps the SHA-256 of its final tables (`dumpTables`), so
 * routes that differ without changing any counter are caught too.
 */
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseScenario, resultToJson, scaleScenario, simulate, type Scenario } from '@phoenix-overlay/sim'
import { scriptArgs } from '../tools/script-args.ts'

const here = dirname(fileURLToPath(import.meta.url))
export const FIXTURES_DIR = join(here, 'fixtures', 'identity')

export interface IdentityCase {
  /** File-name safe: `<scenario>@<nodes>[+variant]`. */
  readonly name: string
  /** Small enough for the test suite (a second or so each). */
  readonly quick: boolean
  readonly scenario: () => Scenario
}

const load = (file: string): Scenario => parseScenario(JSON.parse(readFileSync(join(here, 'scenarios', `${file}.json`), 'utf8')))
const at = (file: string, nodes: number): Scenario => scaleScenario(load(file), nodes)

/** Leave, join, link failure and heal, restart and crash in one run: every kind of scenario event. */
function withEveryEvent(base: Scenario): Scenario {
  return parseScenario({
    ...base,
    events: [
      { atMs: 100, type: 'join', nodes: { count: 3, subnet: 'B' } },
      { atMs: 2_000, type: 'leave', nodes: { count: 5, subnet: 'A' } },
      { atMs: 2_500, type: 'linkFail', between: ['A-001', 'A-002'] },
      { atMs: 4_000, type: 'linkHeal', between: ['A-001', 'A-002'] },
      { atMs: 6_000, type: 'restart', nodes: { count: 5, subnet: 'A' } },
      { atMs: 7_000, type: 'crash', nodes: { fraction: 0.1 } },
    ],
  })
}

const signed = (s: Scenario): Scenario => ({ ...s, processing: { ...s.processing, perRecordSignUs: 88, perRecordVerifyUs: 155 } })

export const IDENTITY_CASES: readonly IdentityCase[] = [
  // Every scenario file, at 400 processes.
  { name: 'paper-1-subnet@400', quick: false, scenario: () => at('paper-1-subnet', 400) },
  { name: 'paper-3-subnets@400', quick: false, scenario: () => at('paper-3-subnets', 400) },
  { name: 'paper-fig6-churn@400', quick: false, scenario: () => at('paper-fig6-churn', 400) },
  // The baselines and the other modes, at 400 where a run takes seconds.
  { name: 'paper-3-subnets@400+offline', quick: false, scenario: () => ({ ...at('paper-3-subnets', 400), strategy: 'offline' }) },
  { name: 'paper-3-subnets@400+master', quick: false, scenario: () => ({ ...at('paper-3-subnets', 400), strategy: 'master' }) },
  { name: 'paper-3-subnets@400+master+reject', quick: false, scenario: () => { const s = at('paper-3-subnets', 400); return { ...s, strategy: 'master', network: { ...s.network, firewall: 'reject' } } } },
  { name: 'paper-3-subnets@400+discovery-all', quick: false, scenario: () => ({ ...at('paper-3-subnets', 400), discovery: 'all' }) },
  { name: 'paper-3-subnets@400+signed', quick: false, scenario: () => signed(at('paper-3-subnets', 400)) },
  { name: 'paper-3-subnets@200+events', quick: false, scenario: () => withEveryEvent(at('paper-3-subnets', 200)) },
  { name: 'paper-3-subnets@200+events+signed', quick: false, scenario: () => signed(withEveryEvent(at('paper-3-subnets', 200))) },
  // Naive DSDV is quadratic in messages: 60 processes take a second, 100 take half a minute.
  { name: 'paper-3-subnets@60+naive', quick: false, scenario: () => ({ ...at('paper-3-subnets', 60), strategy: 'naive' }) },
  // The quick cases: every code path above at a size the test suite can afford.
  { name: 'paper-1-subnet@100', quick: true, scenario: () => at('paper-1-subnet', 100) },
  { name: 'paper-3-subnets@100', quick: true, scenario: () => at('paper-3-subnets', 100) },
  { name: 'paper-fig6-churn@40', quick: true, scenario: () => at('paper-fig6-churn', 40) },
  { name: 'paper-3-subnets@100+offline', quick: true, scenario: () => ({ ...at('paper-3-subnets', 100), strategy: 'offline' }) },
  { name: 'paper-3-subnets@100+master', quick: true, scenario: () => ({ ...at('paper-3-subnets', 100), strategy: 'master' }) },
  { name: 'paper-3-subnets@40+signed', quick: true, scenario: () => signed(at('paper-3-subnets', 40)) },
  { name: 'paper-3-subnets@60+events', quick: true, scenario: () => withEveryEvent(at('paper-3-subnets', 60)) },
  { name: 'paper-3-subnets@60+events+signed', quick: true, scenario: () => signed(withEveryEvent(at('paper-3-subnets', 60))) },
  { name: 'paper-3-subnets@100+reject', quick: true, scenario: () => { const s = at('paper-3-subnets', 100); return { ...s, network: { ...s.network, firewall: 'reject' } } } },
  { name: 'paper-3-subnets@100+discovery-all', quick: true, scenario: () => ({ ...at('paper-3-subnets', 100), discovery: 'all' }) },
  { name: 'paper-3-subnets@30+naive', quick: true, scenario: () => ({ ...at('paper-3-subnets', 30), strategy: 'naive' }) },
]

export interface CaseOutput {
  /** The result file exactly as `phoenix sim --out` writes it. */
  readonly result: string
  /** SHA-256 of the final tables as `phoenix sim --dump-tables` writes them, one line. */
  readonly tables: string
}

export function runCase(c: IdentityCase): CaseOutput {
  const { sim, result } = simulate(c.scenario())
  const tables = createHash('sha256').update(`${JSON.stringify(sim.dumpTables())}\n`).digest('hex')
  return { result: resultToJson(result), tables: `${tables}\n` }
}

const fixturePaths = (c: IdentityCase) => ({ result: join(FIXTURES_DIR, `${c.name}.result.json`), tables: join(FIXTURES_DIR, `${c.name}.tables.sha256`) })

export function writeFixture(c: IdentityCase, out: CaseOutput): void {
  mkdirSync(FIXTURES_DIR, { recursive: true })
  const paths = fixturePaths(c)
  writeFileSync(paths.result, out.result)
  writeFileSync(paths.tables, out.tables)
}

/** Where two texts first differ, as one line for a person; undefined if they are identical. */
export function firstDifference(expected: string, actual: string): string | undefined {
  if (expected === actual) return undefined
  const a = expected.split('\n')
  const b = actual.split('\n')
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i] !== b[i]) return `line ${i + 1}: expected ${JSON.stringify(a[i] ?? '<end>')}, got ${JSON.stringify(b[i] ?? '<end>')}`
  }
  return 'same lines, different bytes (line endings?)'
}

/** Every difference between a case's fixture and a fresh run (empty = byte-identical). */
export function compareCase(c: IdentityCase, out: CaseOutput): string[] {
  const paths = fixturePaths(c)
  const problems: string[] = []
  for (const what of ['result', 'tables'] as const) {
    let expected: string
    try {
      expected = readFileSync(paths[what], 'utf8')
    } catch {
      problems.push(`${what}: no fixture ${paths[what].slice(here.length + 1)} (run with --write once to make it)`)
      continue
    }
    const diff = firstDifference(expected, out[what])
    if (diff !== undefined) problems.push(`${what === 'result' ? 'result file' : 'final tables (sha256)'}: ${diff}`)
  }
  return problems
}

function main(args: string[]): number {
  const { values } = scriptArgs(
    { args, options: { write: { type: 'boolean', default: false }, only: { type: 'string' }, quick: { type: 'boolean', default: false } } },
    { summary: 'runs the identity cases and compares each result byte for byte with fixtures/identity (the same seed must give the same file)', help: { write: 'write the fixtures instead of comparing (after a change that alters results)', only: 'one case, by name', quick: 'only the quick cases' } },
  )
  const write = values.write
  const only = values.only
  const cases = IDENTITY_CASES.filter((c) => (only === undefined ? !values.quick || c.quick : c.name === only))
  if (cases.length === 0) {
    process.stderr.write(`identity: no case named ${JSON.stringify(only)}; cases: ${IDENTITY_CASES.map((c) => c.name).join(', ')}\n`)
    return 2
  }
  let failed = 0
  for (const c of cases) {
    const start = performance.now()
    const out = runCase(c)
    const seconds = ((performance.now() - start) / 1000).toFixed(1)
    if (write) {
      writeFixture(c, out)
      process.stdout.write(`wrote   ${c.name} (${seconds} s)\n`)
      continue
    }
    const problems = compareCase(c, out)
    if (problems.length === 0) process.stdout.write(`same    ${c.name} (${seconds} s)\n`)
    else {
      failed++
      process.stdout.write(`DIFFERS ${c.name} (${seconds} s)\n${problems.map((p) => `        ${p}\n`).join('')}`)
    }
  }
  if (!write) process.stdout.write(failed === 0 ? `identity: all ${cases.length} cases byte-identical to fixtures/identity\n` : `identity: ${failed} of ${cases.length} cases differ\n`)
  return failed === 0 ? 0 : 1
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) process.exitCode = main(process.argv.slice(2).filter((a) => a !== '--'))
