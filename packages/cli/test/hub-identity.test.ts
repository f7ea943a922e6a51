import { afterEach, describe, expect, it } from 'vitest'
import { freePort, startNode, waitGone, type Started } from './helpers.ts'

/**
 * A worker started with `--hub <address>/p2p/<id>` whose hub is restarted without its key file
 * (a new peer id at the same address) can never reconnect: the handshake refuses the new id. It
 * must say so once on stderr, naming the address and the way out, instead of waiting silently.
 */
describe('a hub that comes back with another peer id', () => {
  const started: Started[] = []
  afterEach(() => started.splice(0).forEach((s) => s.killGroup()))

  it('is reported once on stderr, naming the hub address and --key', async () => {
    const port = await freePort()
    const listen = `/ip4/127.0.0.1/tcp/${port}`
    const hub = startNode(['--listen', listen, '--name', 'hub'])
    started.push(hub)
    const hubAddress = (await hub.waitFor(/listening on (\S+)/))[1]!
    // The hub given twice (a job script's list with a repeat) is one hub, and said so.
    const worker = startNode(['--hub', hubAddress, '--hub', hubAddress, '--name', 'worker'])
    started.push(worker)
    expect((await worker.waitFor(/names: worker; hubs: (\d+)/))[1]).toBe('1')
    process.kill(hub.pid, 'SIGKILL')
    await waitGone([hub.pid], 5_000)

    const replacement = startNode(['--listen', listen, '--name', 'hub'])
    started.push(replacement)
    const replacementId = (await replacement.waitFor(/phoenix node (\S+) listening/))[1]!
    expect(hubAddress).not.toContain(replacementId)
    const line = (await worker.waitFor(/^.*another node answers at this hub address.*$/m, 45_000))[0]
    expect(line).toContain(hubAddress)
    expect(line).toContain('--key')
    // Once per cause: the redials every few seconds stay at debug level.
    await new Promise((resolve) => setTimeout(resolve, 8_000))
    expect(worker.stderr.match(/another node answers/g)).toHaveLength(1)
  }, 90_000)
})
