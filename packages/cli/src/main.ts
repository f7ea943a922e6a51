import { Command, CommanderError, Help } from 'commander'
import { readFileSync } from 'node:fs'
import { registerInspectCommands } from './commands/inspect.ts'
import { registerNodeCommand } from './commands/node.ts'
import { registerRecvCommand } from './commands/recv.ts'
import { registerSendCommand } from './commands/send.ts'
import { registerTopologyCommands } from './commands/topology.ts'

/** The package's version (package.json sits one level above src/, as it will above a built dist/). */
export const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version

const SIM_DESCRIPTION = 'run a discrete-event simulation of a scenario file and check every routing table against BFS'

/** The command a command line runs (`phoenix help sim` counts as `sim`). */
function commandOf(args: readonly string[]): string | undefined {
  const words = args.filter((a) => !a.startsWith('-'))
  return words[0] === 'help' ? words[1] : words[0]
}

/**
 * The program. The simulator takes a third of a second to load, so unless the command line is
 * about `sim` (`sim`, `help sim`), `sim` is listed with its description only: `send` and `recv`,
 * which shell jobs run once per message, start without it.
 */
export async function buildProgram(args: readonly string[] = process.argv.slice(2)): Promise<Command> {
  const program = new Command()
  program.name('phoenix').description('Phoenix overlay: hub-bootstrapped discovery and optimized DSDV routing').version(VERSION, '-V, --version')
  // Commander prints its own line for a malformed command line and then throws (the commands
  // registered below inherit this): the exit status is decided in one place, below.
  program.exitOverride()
  // Settings the commands registered below inherit. Every failure line starts "phoenix: ", the
  // parser's too (it said "error: "); a repeatable option's empty list is no default worth
  // showing (six options said "(default: [])").
  // Its "(Did you mean --nodes?)" came on a line of its own: one line, as every failure here.
  program.configureOutput({ outputError: (text, write) => write(`phoenix: ${text.replace(/^error: /, '').trimEnd().replace(/\s*\n\s*/g, ' ')}\n`) })
  program.configureHelp({ optionDescription: (option) => new Help().optionDescription(option).replace(/ \(default: \[\]\)$/, '') })
  if (commandOf(args) === 'sim') (await import('./commands/sim.ts')).registerSimCommand(program, SIM_DESCRIPTION)
  else program.command('sim').description(SIM_DESCRIPTION)
  registerNodeCommand(program, VERSION)
  registerInspectCommands(program)
  registerSendCommand(program)
  registerRecvCommand(program)
  registerTopologyCommands(program)
  return program
}

/** Every failure is one line on stderr: `phoenix: <option or field> <value>: <cause>`. */
function oneLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error)
  return text.split('\n')[0]!.trim()
}

const isMain = process.argv[1] !== undefined && /(main\.ts|phoenix(\.js)?)$/.test(process.argv[1])
if (isMain) {
  try {
    await (await buildProgram()).parseAsync(process.argv)
  } catch (error) {
    // Help and --version end with 0; a malformed command line (an option's value, an unknown
    // option or command, a missing argument) is a usage error: 2, as a configuration error is.
    if (error instanceof CommanderError) process.exit(error.exitCode === 0 ? 0 : 2)
    process.stderr.write(`phoenix: ${oneLine(error)}\n`)
    // A configuration error (config-error.ts: an option's value or a file it names) exits 2, any other failure 1.
    process.exit((error as { exitCode?: unknown }).exitCode === 2 ? 2 : 1)
  }
}
