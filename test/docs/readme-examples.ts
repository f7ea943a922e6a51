/**
 * The examples in the READMEs, as code: every ```ts block is type-checked (against the packages as
 * they are) and run, every ```sh block is run from the repository root, so a README that drifts
 * from the code fails the suite. A block that must not run (it takes minutes, needs root, a
 * network or a running node) is preceded by a line `<!-- not-run: <reason> -->`; a `ts` block so
 * marked is still type-checked. Blocks in other languages (jsonc, …) are prose.
 */
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url))

export interface CodeBlock {
  /** The README, relative to the repository root. */
  readonly readme: string
  /** 1-based line of the block's first code line in the README. */
  readonly line: number
  readonly lang: string
  readonly code: string
  /** Why it must not run, when a `<!-- not-run: reason -->` line precedes it. */
  readonly notRun: string | undefined
}

const FENCE = /^(\s*)```(\S*)\s*$/
const NOT_RUN = /^<!--\s*not-run:\s*(.*?)\s*-->$/

/** The root README and every package's (the workspace's packages and simulations/). */
export function readmes(): string[] {
  const packages = readdirSync(join(repoRoot, 'packages')).map((p) => `packages/${p}/README.md`)
  return ['README.md', ...packages, 'simulations/README.md'].filter((f) => existsSync(join(repoRoot, f)))
}

/** The fenced blocks of one README, with the marker that precedes each, if any. */
export function codeBlocks(readme: string, text: string): CodeBlock[] {
  const lines = text.split('\n')
  const blocks: CodeBlock[] = []
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!)
    if (open === null) continue
    let end = i + 1
    while (end < lines.length && !/^\s*```\s*$/.test(lines[end]!)) end++
    if (end === lines.length) throw new Error(`${readme}:${i + 1}: a code block is not closed`)
    let previous = i - 1
    while (previous >= 0 && lines[previous]!.trim() === '') previous--
    const marker = previous >= 0 ? NOT_RUN.exec(lines[previous]!.trim()) : null
    // A block inside a list item is indented with it: the code is what follows that indent.
    const indent = open[1]!.length
    const code = lines.slice(i + 1, end).map((l) => l.slice(Math.min(indent, l.length - l.trimStart().length)))
    blocks.push({ readme, line: i + 2, lang: open[2] ?? '', code: code.join('\n'), notRun: marker === null ? undefined : marker[1] })
    i = end
  }
  return blocks
}

/** Where a README's ts examples are written: beside the README (so its package resolves as in the package), in the ignored .scratch/. */
function exampleDir(readme: string): string {
  return join(repoRoot, dirname(readme), '.scratch', 'readme-examples')
}

/** Writes each ts block to a file; returns the files, each with its block. */
export function writeTsExamples(blocks: readonly CodeBlock[]): { file: string; block: CodeBlock }[] {
  const out: { file: string; block: CodeBlock }[] = []
  for (const block of blocks) {
    const dir = exampleDir(block.readme)
    mkdirSync(dir, { recursive: true })
    const file = join(dir, `line-${block.line}.ts`)
    // An example without imports is still a module (so top-level await and its names stay its own).
    writeFileSync(file, `${block.code}\nexport {}\n`)
    out.push({ file, block })
  }
  return out
}

export function removeTsExamples(blocks: readonly CodeBlock[]): void {
  for (const readme of new Set(blocks.map((b) => b.readme))) rmSync(exampleDir(readme), { recursive: true, force: true })
}

/**
 * Type-checks the examples with the repository's compiler options (examples may leave a value
 * unused: they show it). Returns one line per error, `README:line: message`.
 */
export function typeCheck(examples: readonly { file: string; block: CodeBlock }[]): string[] {
  const configPath = join(repoRoot, 'tsconfig.json')
  const config = ts.readConfigFile(configPath, (path) => ts.sys.readFile(path))
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, repoRoot)
  const options: ts.CompilerOptions = { ...parsed.options, noUnusedLocals: false, noUnusedParameters: false, noEmit: true }
  const program = ts.createProgram(
    examples.map((e) => e.file),
    options,
  )
  const errors: string[] = []
  for (const { file, block } of examples) {
    const source = program.getSourceFile(file)
    if (source === undefined) throw new Error(`${file} was not compiled`)
    for (const d of [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)]) {
      const at = d.start === undefined ? 0 : source.getLineAndCharacterOfPosition(d.start).line
      errors.push(`${block.readme}:${block.line + at}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`)
    }
  }
  return errors
}

/** `README:line` of a block, for messages. */
export function where(block: CodeBlock): string {
  return `${block.readme}:${block.line}`
}
