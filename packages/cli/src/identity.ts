import { generateKeyPair, privateKeyFromProtobuf, privateKeyToProtobuf } from '@libp2p/crypto/keys'
import type { PrivateKey } from '@libp2p/interface'
import { readFileSync, statSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { ConfigError } from './config-error.ts'
import { LockHeldError, PidLock } from './key-lock.ts'

/** Fails with one line naming `--key` when the key file's directory is missing or not a directory. */
function checkDirectory(file: string): void {
  const dir = dirname(file)
  const stat = statSync(dir, { throwIfNoEntry: false })
  if (stat === undefined) throw new ConfigError(`--key ${file}: directory ${dir} does not exist`)
  if (!stat.isDirectory()) throw new ConfigError(`--key ${file}: ${dir} is not a directory`)
}

/**
 * Locks the identity in `file` for this process (`<file>.lock`), so two live processes never run
 * one identity; a lock left by a process that died is taken over.
 */
export function lockKey(file: string): PidLock {
  checkDirectory(file)
  try {
    return PidLock.acquire(`${file}.lock`)
  } catch (error) {
    if (error instanceof LockHeldError) throw new Error(`--key ${file}: in use by phoenix node pid ${error.holder.pid} (one identity, one process)`)
    throw new Error(`--key ${file}: cannot lock it (${(error as Error).message})`)
  }
}

/**
 * Reads the identity key from `file`, or creates one there (Ed25519, mode 0600) if there is none.
 * A key other users can read is used, with a warning through `warn`: whoever reads it can run as
 * this node, with its names (ssh refuses such a key; a node is more often restarted by a job
 * script that cannot answer a refusal).
 */
export async function loadOrCreateKey(file: string, warn: (line: string) => void = (line) => process.stderr.write(`${line}\n`)): Promise<PrivateKey> {
  checkDirectory(file)
  const stat = statSync(file, { throwIfNoEntry: false })
  if (stat === undefined) {
    const key = await generateKeyPair('Ed25519')
    try {
      writeFileSync(file, privateKeyToProtobuf(key), { mode: 0o600, flag: 'wx' })
    } catch (error) {
      throw new ConfigError(`--key ${file}: cannot create it (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`)
    }
    return key
  }
  if (!stat.isFile()) throw new ConfigError(`--key ${file}: not a file (${stat.isDirectory() ? 'a directory' : 'a special file'})`)
  let bytes: Uint8Array
  try {
    bytes = readFileSync(file)
  } catch (error) {
    throw new ConfigError(`--key ${file}: cannot read it (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`)
  }
  let key: PrivateKey
  try {
    key = privateKeyFromProtobuf(bytes)
  } catch (error) {
    throw new ConfigError(`--key ${file}: not a libp2p private key (${bytes.length} bytes; ${(error as Error).message})`)
  }
  if ((stat.mode & 0o077) !== 0) warn(`phoenix: warning: --key ${file} can be read by other users (mode ${(stat.mode & 0o777).toString(8)}): whoever reads it can run as this node; chmod 600 ${file}`)
  return key
}
