import { chmodSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadOrCreateKey } from '../src/identity.ts'
import { tempDir } from './helpers.ts'

describe('the identity key file', () => {
  it('is created 0600, and one that other users can read is used with a warning naming it and the fix', async () => {
    const file = join(tempDir('key-mode'), 'node.key')
    const warnings: string[] = []
    const created = await loadOrCreateKey(file, (line) => warnings.push(line))
    const again = await loadOrCreateKey(file, (line) => warnings.push(line))
    expect(again.publicKey.equals(created.publicKey)).toBe(true)
    expect(warnings).toEqual([])
    chmodSync(file, 0o644)
    const loose = await loadOrCreateKey(file, (line) => warnings.push(line))
    expect(loose.publicKey.equals(created.publicKey)).toBe(true)
    expect(warnings).toEqual([`phoenix: warning: --key ${file} can be read by other users (mode 644): whoever reads it can run as this node; chmod 600 ${file}`])
  })
})
