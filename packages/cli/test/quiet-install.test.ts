import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { REPO } from './helpers.ts'

/** The names listed under `key:` in pnpm-workspace.yaml (a plain `- name` list). */
function listed(yaml: string, key: string): string[] {
  const block = new RegExp(`^${key}:\\n((?:  - .+\\n)+)`, 'm').exec(yaml)?.[1] ?? ''
  return [...block.matchAll(/^ {2}- (\S+)$/gm)].map((m) => m[1]!)
}

/** Every installed package (in pnpm's virtual store) with an install script pnpm 10 would hold back. */
function packagesWithInstallScripts(): string[] {
  const store = join(REPO, 'node_modules/.pnpm')
  const found = new Set<string>()
  for (const entry of readdirSync(store)) {
    const modules = join(store, entry, 'node_modules')
    if (!existsSync(modules)) continue
    for (const scope of readdirSync(modules)) {
      const dirs = scope.startsWith('@') ? readdirSync(join(modules, scope)).map((n) => join(scope, n)) : [scope]
      for (const dir of dirs) {
        const manifest = join(modules, dir, 'package.json')
        if (!existsSync(manifest)) continue
        const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string; scripts?: Record<string, string> }
        if (pkg.name !== undefined && ['preinstall', 'install', 'postinstall'].some((s) => pkg.scripts?.[s] !== undefined)) found.add(pkg.name)
      }
    }
  }
  return [...found].sort()
}

describe('a quiet install', () => {
  it('every dependency with an install script is allowed or ignored explicitly, so pnpm prints no "Ignored build scripts" box', () => {
    const yaml = readFileSync(join(REPO, 'pnpm-workspace.yaml'), 'utf8')
    const decided = new Set([...listed(yaml, 'onlyBuiltDependencies'), ...listed(yaml, 'ignoredBuiltDependencies')])
    const scripted = packagesWithInstallScripts()
    expect(scripted).toContain('node')
    expect(scripted.filter((name) => !decided.has(name))).toEqual([])
  })
})
