/**
 * Option parsing for the repository's scripts (benchmarks, simulations, examples, harnesses):
 * Node's own `parseArgs` (node:util; the scripts need nothing more), plus what a user expects of
 * a command and `parseArgs` leaves out: `--help` lists the options and exits 0, and a wrong
 * option or value is one line on stderr naming it, exit 2, instead of a stack trace. The
 * `phoenix` command itself uses commander (packages/cli), whose sub-commands these scripts lack.
 */
import { basename } from 'node:path'
import { parseArgs, type ParseArgsConfig } from 'node:util'

type OptionsConfig = NonNullable<ParseArgsConfig['options']>

export interface ScriptAbout<O extends OptionsConfig> {
  /** What the script does, one line (the first line of `--help`). */
  readonly summary: string
  /** One line per option for `--help` (an option without one shows only its type and default). */
  readonly help?: { readonly [K in keyof O]?: string }
  /** The words after `[options]` in the usage line, when the script takes positionals. */
  readonly positionals?: string
}

/** Where a script's parsing writes and how it ends (tests give their own). */
export interface ScriptIo {
  readonly out: (text: string) => void
  readonly err: (text: string) => void
  readonly exit: (code: number) => never
}

const processIo: ScriptIo = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
  exit: (code) => process.exit(code),
}

/** The script's name in messages: the file run, without its directory. */
const scriptName = () => basename(process.argv[1] ?? 'script')

/**
 * `parseArgs(config)` with `--help` and one-line errors. `config.args` defaults to the process's
 * arguments without a bare `--` (pnpm's `run x -- --flag` passes it through).
 */
export function scriptArgs<T extends ParseArgsConfig & { options: OptionsConfig }>(config: T, about: ScriptAbout<T['options']>, io: ScriptIo = processIo): ReturnType<typeof parseArgs<T>> {
  const args = config.args ?? process.argv.slice(2).filter((a) => a !== '--')
  if (args.includes('--help') || args.includes('-h')) {
    io.out(usage(config, about))
    return io.exit(0)
  }
  try {
    return parseArgs({ ...config, args }) as ReturnType<typeof parseArgs<T>>
  } catch (error) {
    return fail(`${(error as Error).message.split('\n')[0]} (--help lists the options)`, io)
  }
}

/** The `--help` text: summary, usage line, one line per option with its type, default and help. */
export function usage<T extends ParseArgsConfig & { options: OptionsConfig }>(config: T, about: ScriptAbout<T['options']>): string {
  const rows = Object.entries(config.options).map(([name, option]) => {
    const value = option.type === 'string' ? ` <${option.multiple === true ? 'value, repeatable' : 'value'}>` : ''
    const fallback = option.default === undefined ? '' : ` (default: ${JSON.stringify(option.default)})`
    const text = (about.help as Record<string, string | undefined> | undefined)?.[name] ?? ''
    return [`  --${name}${value}`, `${text}${fallback}`.trim()] as const
  })
  const width = Math.max(0, ...rows.map(([left]) => left.length)) + 2
  const lines = rows.map(([left, right]) => (right === '' ? left : left.padEnd(width) + right))
  const positionals = about.positionals === undefined ? '' : ` ${about.positionals}`
  return `${about.summary}\n\nusage: ${scriptName()} [options]${positionals}\n\noptions:\n${lines.join('\n')}\n  --help${' '.repeat(Math.max(1, width - 8))}this text\n`
}

/** Ends the script with one line on stderr naming what was wrong, exit code 2. */
export function fail(message: string, io: ScriptIo = processIo): never {
  io.err(`${scriptName()}: ${message}\n`)
  return io.exit(2)
}

/**
 * An option's value as an integer in [min, max], or the script ends with one line naming the
 * option (`--messages: an integer >= 1, got "abc"`).
 */
export function intOption(values: Readonly<Record<string, unknown>>, name: string, min: number, max = Number.MAX_SAFE_INTEGER, io: ScriptIo = processIo): number {
  const raw = values[name]
  const value = typeof raw === 'string' && /^-?\d+$/.test(raw.trim()) ? Number(raw) : Number.NaN
  if (Number.isSafeInteger(value) && value >= min && value <= max) return value
  const unbounded = max === Number.MAX_SAFE_INTEGER
  const wanted = min === Number.MIN_SAFE_INTEGER && unbounded ? 'an integer' : unbounded ? `an integer >= ${min}` : `an integer in [${min}, ${max}]`
  return fail(`--${name}: ${wanted}, got ${JSON.stringify(raw)}`, io)
}
