import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { parseScenario } from '../../packages/sim/src/scenario.ts'
import { type CodeBlock, codeBlocks, readmes, removeTsExamples, repoRoot, typeCheck, where, writeTsExamples } from './readme-examples.ts'

/** One example may take this long (they are meant to take seconds; slower ones are marked not-run). */
const EXAMPLE_TIMEOUT_MS = 60_000

const blocks: CodeBlock[] = readmes().flatMap((readme) => codeBlocks(readme, readFileSync(join(repoRoot, readme), 'utf8')))
const tsBlocks = blocks.filter((b) => b.lang === 'ts')
const shBlocks = blocks.filter((b) => b.lang === 'sh')
const examples = writeTsExamples(tsBlocks)
afterAll(() => removeTsExamples(tsBlocks))

function run(command: string, args: string[]): { status: number | null; output: string } {
  const r = spawnSync(command, args, { cwd: repoRoot, encoding: 'utf8', timeout: EXAMPLE_TIMEOUT_MS, env: { ...process.env, FORCE_COLOR: '0' } })
  return { status: r.status, output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error === undefined ? '' : String(r.error)}`.slice(-2000) }
}

describe('README examples (test/docs/readme-examples.ts)', () => {
  it('finds the examples, and every block that does not run says why', () => {
    expect(tsBlocks.length).toBeGreaterThan(2)
    expect(shBlocks.length).toBeGreaterThan(2)
    for (const b of blocks) if (b.notRun !== undefined) expect(b.notRun, `${where(b)}: not-run needs a reason`).not.toBe('')
  })

  it('every ts example type-checks against the packages as they are', () => {
    expect(typeCheck(examples)).toEqual([])
  })

  for (const { file, block } of examples.filter((e) => e.block.notRun === undefined)) {
    it(`ts example at ${where(block)} runs`, () => {
      const r = run(join(repoRoot, 'node_modules', '.bin', 'tsx'), [file])
      expect(r.status, r.output).toBe(0)
    })
  }

  for (const block of shBlocks.filter((b) => b.notRun === undefined)) {
    it(`sh example at ${where(block)} runs`, () => {
      const r = run('bash', ['-euo', 'pipefail', '-c', block.code])
      expect(r.status, r.output).toBe(0)
    })
  }
})

/** JSON with `//` comments to end of line (outside strings) removed. */
function stripLineComments(jsonc: string): string {
  return jsonc
    .split('\n')
    .map((line) => {
      let inString = false
      for (let i = 0; i < line.length; i++) {
        if (line[i] === '"' && line[i - 1] !== '\\') inString = !inString
        else if (!inString && line[i] === '/' && line[i + 1] === '/') return line.slice(0, i)
      }
      return line
    })
    .join('\n')
}

describe('scenario files shown in READMEs', () => {
  // The sim README's example listed its events out of time order, which the simulator refuses
  // (found by a docs audit): a jsonc block holding a scenario is parsed as the simulator does.
  const scenarios = blocks.filter((b) => b.lang === 'jsonc' && b.notRun === undefined && /"subnets"\s*:/.test(b.code))
  it('there is one to check', () => expect(scenarios.length).toBeGreaterThan(0))
  for (const block of scenarios) {
    it(`the scenario at ${where(block)} is one the simulator takes`, () => {
      expect(() => parseScenario(JSON.parse(stripLineComments(block.code)))).not.toThrow()
    })
  }
})

describe('the example extractor', () => {
  it('reads blocks, their languages, lines and not-run markers; refuses an unclosed block', () => {
    const text = ['# x', '```ts', 'const a = 1', '```', '', '<!-- not-run: needs root -->', '', '```sh', 'ip netns add x', '```', '```jsonc', '{}', '```'].join('\n')
    expect(codeBlocks('R.md', text)).toEqual([
      { readme: 'R.md', line: 3, lang: 'ts', code: 'const a = 1', notRun: undefined },
      { readme: 'R.md', line: 9, lang: 'sh', code: 'ip netns add x', notRun: 'needs root' },
      { readme: 'R.md', line: 12, lang: 'jsonc', code: '{}', notRun: undefined },
    ])
    expect(() => codeBlocks('R.md', '```ts\nconst a = 1\n')).toThrow('R.md:1: a code block is not closed')
    expect(codeBlocks('R.md', '- item:\n\n  ```sh\n  echo hi\n    echo more\n  ```\n')).toEqual([{ readme: 'R.md', line: 4, lang: 'sh', code: 'echo hi\n  echo more', notRun: undefined }])
  })

  it('a type error in an example is reported at its README line', () => {
    const bad: CodeBlock = { readme: 'packages/core/README.md', line: 40, lang: 'ts', code: "import { PhoenixCore } from '@phoenix-overlay/core'\nconst n: number = new PhoenixCore({ id: 'x' }).names", notRun: undefined }
    const written = writeTsExamples([bad])
    try {
      const errors = typeCheck(written)
      expect(errors).toHaveLength(1)
      expect(errors[0]).toMatch(/^packages\/core\/README\.md:41: Type 'readonly string\[\]' is not assignable to type 'number'/)
    } finally {
      removeTsExamples([bad])
    }
  })
})
