/**
 * `phoenix --version` start-up time: the repository's bin (packages/cli/bin/phoenix, which loads
 * the TypeScript sources on Node's own transform) against the bin a user installs (phoenix-overlay's
 * bin/phoenix.js, built JavaScript), both on the workspace's Node 24, in one run, interleaved.
 * Also prints the tarballs' sizes and what `npm install` of them takes in a fresh project, with
 * npm's cache as it is and with an empty one.
 *
 *   npx -y pnpm@10 run bench:startup [-- --runs 10]
 */
import { rmSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { intOption, scriptArgs } from '../../tools/script-args.ts'
import { installFresh, npmInstall, repoRoot, run } from './install.ts'

const { values } = scriptArgs({ options: { runs: { type: 'string', default: '10' } } }, { summary: 'the packed packages installed in a fresh project: tarball sizes and start-up time', help: { runs: 'start-ups to time' } })
const runs = intOption(values, 'runs', 1)

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

const installed = await installFresh('startup')
try {
  console.log(`tarballs (pnpm pack):`)
  for (const t of installed.tarballs) console.log(`  ${basename(t.file).padEnd(40)} ${(t.bytes / 1024).toFixed(1).padStart(7)} KiB`)
  const total = installed.tarballs.reduce((sum, t) => sum + t.bytes, 0)
  console.log(`  ${'total'.padEnd(40)} ${(total / 1024).toFixed(1).padStart(7)} KiB`)
  console.log(`build ${(installed.buildMs / 1000).toFixed(1)} s, pack ${(installed.packMs / 1000).toFixed(1)} s`)
  console.log(`npm install of the tarballs in a fresh project, npm's cache as it is: ${(installed.installMs / 1000).toFixed(1)} s`)
  const coldMs = await npmInstall(join(dirname(installed.project), 'cold'), installed.tarballs, { cacheDir: join(dirname(installed.project), 'empty-npm-cache') })
  console.log(`npm install of the tarballs in a fresh project, empty npm cache (all from the registry): ${(coldMs / 1000).toFixed(1)} s`)

  const bins = {
    'before: packages/cli/bin/phoenix (from source)': join(repoRoot, 'packages', 'cli', 'bin', 'phoenix'),
    'after:  installed phoenix (built JavaScript)': join(installed.project, 'node_modules', '.bin', 'phoenix'),
  }
  const times = new Map<string, number[]>(Object.keys(bins).map((k) => [k, []]))
  for (let i = 0; i < runs; i++) {
    for (const [label, bin] of Object.entries(bins)) {
      const r = await run(bin, ['--version'], installed.project, 60_000)
      times.get(label)!.push(r.ms)
    }
  }
  console.log(`phoenix --version, median of ${runs} (interleaved, same machine, same run):`)
  const medians = [...times].map(([label, ms]) => [label, median(ms)] as const)
  for (const [label, ms] of medians) console.log(`  ${label.padEnd(56)} ${ms.toFixed(0).padStart(5)} ms`)
  console.log(`  ratio before/after: ${(medians[0]![1] / medians[1]![1]).toFixed(1)}x`)
} finally {
  rmSync(dirname(installed.project), { recursive: true, force: true })
}
