import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createControlServer, type ControlTarget } from '../src/control-server.ts'
import { Inbox } from '../src/inbox.ts'
import { clientUidIn, tableEnd } from '../src/peer-user.ts'

/**
 * A control endpoint on a TCP port serves only its node's user (and root): every local user can
 * connect to 127.0.0.1, and whoever uses the endpoint sends as the node and takes its messages.
 */
describe('the control endpoint on a TCP port and the users of the machine', () => {
  it('finds the client end of a loopback connection in the kernel socket table, by its address and port', () => {
    expect(tableEnd('127.0.0.1', 7400)).toBe('0100007F:1CE8')
    expect(tableEnd('::1', 7400)).toBe('1CE8')
    const client = tableEnd('127.0.0.1', 0x9c41)
    const server = tableEnd('127.0.0.1', 0x1ce8)
    const table = [
      '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
      '   0: 0100007F:1CE8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 590 1',
      // Another user's connection elsewhere with the same ports: not our client.
      '   1: 0A000002:9C41 0A000003:1CE8 01 00000000:00000000 00:00000000 00000000  1003        0 699 1',
      // The server's end of the connection (local 7400, remote 40001), owned by the node's user.
      '   2: 0100007F:1CE8 0100007F:9C41 01 00000000:00000000 00:00000000 00000000  1000        0 700 1',
      // The client's end (local 40001, remote 7400), owned by uid 1001.
      '   3: 0100007F:9C41 0100007F:1CE8 01 00000000:00000000 00:00000000 00000000  1001        0 701 1',
    ].join('\n')
    expect(clientUidIn(table, client, server)).toBe(1001)
    expect(clientUidIn(table, tableEnd('127.0.0.1', 0x9c42), server)).toBeUndefined()
    // An address of another form is matched by ports (tcp6 lines carry the same columns).
    const table6 = `header\n   0: 0000000000000000FFFF00000100007F:9C41 0000000000000000FFFF00000100007F:1CE8 01 00000000:00000000 00:00000000 00000000  1002 0 9 1`
    expect(clientUidIn(table6, tableEnd('::ffff:127.0.0.1', 0x9c41), tableEnd('::ffff:127.0.0.1', 0x1ce8))).toBe(1002)
  })

  // The served users are a parameter here: this test runs as one user (root on CI), and root is served.
  const phoenix = { addName: () => true, removeName: () => undefined, routes: () => [], peers: () => [], names: ['n'] }
  const me = process.getuid?.() ?? 0
  const open = (served: (uid: number) => boolean) => {
    const endpoint = createControlServer({ users: { ownUid: 4242, served } })
    endpoint.serve({ phoenix: phoenix as unknown as ControlTarget['phoenix'], id: 'self', addresses: () => [], inbox: new Inbox(10, 1000), version: '0', namesPerNodeMax: 64 })
    return endpoint.server
  }
  const refusing = open((uid) => uid === 4242)
  const serving = open((uid) => uid === me)
  const base = new Map<unknown, string>()
  beforeAll(async () => {
    for (const server of [refusing, serving]) {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      base.set(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`)
    }
  })
  afterAll(() => Promise.all([refusing, serving].map((server) => new Promise<void>((resolve) => server.close(() => resolve())))))

  it('refuses another user 403 before anything reaches the node, naming both uids; serves its own', async () => {
    const refused = await fetch(`${base.get(refusing)}/names?add=stolen`, { method: 'POST' })
    expect(refused.status).toBe(403)
    expect(await refused.json()).toEqual({ error: 'FORBIDDEN', message: `the connection comes from uid ${me}: the control endpoint answers only its node's user (uid 4242) and root, since anyone using it can send as the node and take its messages` })
    expect((await fetch(`${base.get(refusing)}/status`)).status).toBe(403)
    const served = await fetch(`${base.get(serving)}/status`)
    expect(served.status).toBe(200)
    expect(((await served.json()) as { names: string[] }).names).toEqual(['n'])
  })
})
