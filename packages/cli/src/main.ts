import { Command, CommanderError } from 'commander'
import { registerNodeCommands } from './commands/node.ts'
import { registerSimCommand } from './commands/sim.ts'

export function buildProgram(): Command {
  const program = new Command()
  program.name('phoenix').description('Phoenix overlay: hub-bootstrapped discovery and optimized DSDV routing').showHelpAfterError()
  registerSimCommand(program)
  registerNodeCommands(program)
  return program
}

const isMain = process.argv[1] !== undefined && /(main\.ts|phoenix(\.js)?)$/.test(process.argv[1])
if (isMain) {
  try {
    await buildProgram().parseAsync(process.argv)
  } catch (error) {
    if (error instanceof CommanderError) process.exit(error.exitCode)
    process.stderr.write(`phoenix: ${error instanceof Error ? error.message : String(error)}\n`)
    process.exit(1)
  }
}
