import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { intOption, scriptArgs, type ScriptIo } from '../tools/script-args.ts'

/** An io that records what a script would print and turns its exit into a throw. */
function recorder() {
  const seen = { out: '', err: '', code: undefined as number | undefined }
  const io: ScriptIo = {
    out: (t) => void (seen.out += t),
    err: (t) => void (seen.err += t),
    exit: (code) => {
      seen.code = code
      throw new Error(`exit ${code}`)
    },
  }
  return { seen, io }
}

const options = { messages: { type: 'string', default: '10' }, ack: { type: 'boolean', default: false } } as const
const about = { summary: 'sends messages', help: { messages: 'how many' } }

describe('scriptArgs: the scripts\' option parsing', () => {
  it('parses like node:util parseArgs', () => {
    const { values } = scriptArgs({ options, args: ['--messages', '5', '--ack'] }, about)
    expect(values).toEqual({ messages: '5', ack: true })
  })

  it('--help prints the summary and every option with its default, and exits 0', () => {
    const { seen, io } = recorder()
    expect(() => scriptArgs({ options, args: ['--help'] }, about, io)).toThrow('exit 0')
    expect(seen.code).toBe(0)
    expect(seen.out.split('\n')[0]).toBe('sends messages')
    expect(seen.out).toMatch(/--messages <value>\s+how many \(default: "10"\)/)
    expect(seen.out).toMatch(/--ack\s+\(default: false\)/)
  })

  it('an unknown option is one line on stderr naming it, exit 2', () => {
    const { seen, io } = recorder()
    expect(() => scriptArgs({ options, args: ['--mesages', '5'] }, about, io)).toThrow('exit 2')
    expect(seen.code).toBe(2)
    expect(seen.err.trimEnd().split('\n')).toHaveLength(1)
    expect(seen.err).toContain("'--mesages'")
    expect(seen.err).toContain('--help')
  })

  it('intOption names the option and the range it wanted', () => {
    const { seen, io } = recorder()
    expect(intOption({ n: '12' }, 'n', 1, 20, io)).toBe(12)
    for (const bad of ['abc', '1.5', '0', '21', '', undefined]) {
      seen.err = ''
      expect(() => intOption({ n: bad }, 'n', 1, 20, io)).toThrow('exit 2')
      expect(seen.err).toMatch(/: --n: an integer in \[1, 20\], got /)
    }
    expect(() => intOption({ n: '-1' }, 'n', 0, undefined, io)).toThrow('exit 2')
    expect(seen.err).toMatch(/--n: an integer >= 0, got "-1"\n$/)
  })

  it('an example run with --help or a misspelt option answers in one line, not a stack trace', async () => {
    const run = promisify(execFile)
    const tsx = fileURLToPath(new URL('../node_modules/.bin/tsx', import.meta.url))
    const job = fileURLToPath(new URL('../examples/job/job.ts', import.meta.url))
    const help = await run(tsx, [job, '--help'])
    expect(help.stdout).toContain('--messages <value>')
    const wrong = await run(tsx, [job, '--mesages', '5']).then(() => undefined, (e: { code: number; stderr: string }) => e)
    expect(wrong?.code).toBe(2)
    expect(wrong?.stderr.trim()).toMatch(/^job\.ts: Unknown option '--mesages'.*--help/)
    const zero = await run(tsx, [job, '--workers', 'two']).then(() => undefined, (e: { code: number; stderr: string }) => e)
    expect(zero?.stderr.trim()).toBe('job.ts: --workers: an integer >= 3, got "two"')
  }, 60_000)

  it('the scale curve refuses a misspelt option or an unknown scenario at once, instead of starting hours of default runs', async () => {
    const run = promisify(execFile)
    const tsx = fileURLToPath(new URL('../node_modules/.bin/tsx', import.meta.url))
    const scale = fileURLToPath(new URL('../simulations/scale.ts', import.meta.url))
    const fails = (args: string[]) => run(tsx, [scale, ...args], { timeout: 30_000 }).then(() => undefined, (e: { code: number; stderr: string }) => e)
    const typo = await fails(['--size', '2000'])
    expect(typo?.code).toBe(2)
    expect(typo?.stderr.trim()).toMatch(/^scale\.ts: Unknown option '--size'.*--help/)
    const scenario = await fails(['--sizes', '100', '--scenarios', 'paper-2-subnets'])
    expect(scenario?.code).toBe(2)
    expect(scenario?.stderr.trim()).toBe('scale.ts: --scenarios: no scenarios/paper-2-subnets.json')
    const help = await run(tsx, [scale, '--help'])
    expect(help.stdout).toMatch(/--rss-limit-mib <value>\s+a run whose resident set passes this is stopped/)
  }, 60_000)
})
