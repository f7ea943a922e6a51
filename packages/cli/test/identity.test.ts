import { existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { callControl } from '../src/control-client.ts'
import { phoenix, startNode, tempDir, waitGone, type Started } from './helpers.ts'

const oneLine = (text: string) => text.trim().split('\n')

describe('one live process per identity and per control socket', () => {
  const dir = tempDir('identity')
  const key = join(dir, 'first.key')
  const socket = join(dir, 'first.sock')
  let first: Started
  let firstPid: number

  beforeAll(async () => {
    first = startNode(['--name', 'first', '--key', key, '--control', socket])
    firstPid = first.pid
    await first.waitFor(/control endpoint on/)
  })
  afterAll(() => first.killGroup())

  /** The first node still does everything through its control endpoint. */
  async function firstStillWorks(): Promise<void> {
    expect(existsSync(socket)).toBe(true)
    // Only the node's user may connect (whoever uses the endpoint sends as the node): 0600, whatever the umask.
    expect(statSync(socket).mode & 0o777).toBe(0o600)
    const status = JSON.parse((await callControl({ socketPath: socket }, 'GET', '/status')).text) as { pid: number; names: string[] }
    expect(status).toMatchObject({ pid: firstPid, names: ['first'] })
    const sent = await phoenix(['send', '--control', socket, '--ack', 'first', 'still here'])
    expect(sent.stdout).toMatch(/^acknowledged by first/)
    const got = await phoenix(['recv', '--control', socket, '--count', '1'])
    expect(got.stdout).toBe('still here\n')
  }

  it('a second node on the same key fails with one line naming the first one\'s pid', async () => {
    const second = await phoenix(['node', '--key', key, '--control', join(dir, 'other.sock')])
    expect(second.code).toBe(1)
    expect(oneLine(second.stderr)).toEqual([`phoenix: --key ${key}: in use by phoenix node pid ${firstPid} (one identity, one process)`])
    await firstStillWorks()
  })

  it('a second node on the same control socket fails the same way and leaves the socket alone', async () => {
    const second = await phoenix(['node', '--key', join(dir, 'other.key'), '--control', socket])
    expect(second.code).toBe(1)
    expect(oneLine(second.stderr)).toEqual([`phoenix: --control ${socket}: in use by phoenix node pid ${firstPid}`])
    await firstStillWorks()
  })

  it('a lock and a socket left by a crashed node are taken over', async () => {
    const crashDir = tempDir('crash')
    const crashKey = join(crashDir, 'node.key')
    const crashSocket = join(crashDir, 'node.sock')
    const crashed = startNode(['--key', crashKey, '--control', crashSocket])
    const id = (await crashed.waitFor(/phoenix node (\S+) listening/))[1]
    await crashed.waitFor(/control endpoint on/)
    process.kill(crashed.pid, 'SIGKILL')
    await waitGone([crashed.pid], 5_000)
    expect(existsSync(`${crashKey}.lock`) && existsSync(crashSocket)).toBe(true)

    const restarted = startNode(['--key', crashKey, '--control', crashSocket])
    try {
      await restarted.waitFor(/control endpoint on/)
      const status = JSON.parse((await callControl({ socketPath: crashSocket }, 'GET', '/status')).text) as { id: string; pid: number }
      expect(status).toEqual(expect.objectContaining({ id, pid: restarted.pid }))
    } finally {
      process.kill(restarted.pid, 'SIGTERM')
      await restarted.exited
    }
    // A clean leave removes what it held.
    expect([existsSync(`${crashKey}.lock`), existsSync(crashSocket), existsSync(`${crashSocket}.lock`)]).toEqual([false, false, false])
  })

  it('a socket left by a crashed node without --key is taken over, and the node starts', async () => {
    // Without --key no other file is statted between the socket's and the transport's import: the
    // case where an lstatSync of the socket made Node resolve the transport under node_modules.
    const crashSocket = join(tempDir('crash-nokey'), 'node.sock')
    const crashed = startNode(['--control', crashSocket])
    await crashed.waitFor(/control endpoint on/)
    process.kill(crashed.pid, 'SIGKILL')
    await waitGone([crashed.pid], 5_000)
    expect(existsSync(crashSocket)).toBe(true)
    const restarted = startNode(['--control', crashSocket])
    try {
      await restarted.waitFor(/control endpoint on/)
      const status = JSON.parse((await callControl({ socketPath: crashSocket }, 'GET', '/status')).text) as { pid: number }
      expect(status.pid).toBe(restarted.pid)
    } finally {
      // If it failed to start, the failure (waitFor's, naming its stderr) is the one to see.
      if (restarted.child.exitCode === null) process.kill(restarted.pid, 'SIGTERM')
      await restarted.exited
    }
  })
})
