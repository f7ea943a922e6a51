import { request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CONTROL_BODY_BYTES_MAX } from '../src/constants.ts'
import { createControlServer, type ControlTarget } from '../src/control-server.ts'
import { Inbox } from '../src/inbox.ts'

/** A control endpoint on a free loopback port serving `phoenix` (a stand-in node) for the enclosing describe block. */
function serveStandIn(phoenix: object, namesPerNodeMax = 64): { port(): number; base(): string } {
  const server = createControlServer()
  let port = 0
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.server.listen(0, '127.0.0.1', resolve))
    port = (server.server.address() as AddressInfo).port
    server.serve({ phoenix: phoenix as unknown as ControlTarget['phoenix'], id: 'self', addresses: () => [], inbox: new Inbox(10, 1000), version: '0', namesPerNodeMax })
  })
  afterAll(() => new Promise<void>((resolve) => server.server.close(() => resolve())))
  return { port: () => port, base: () => `http://127.0.0.1:${port}` }
}

/**
 * The control endpoint's query checks, against a stand-in node that records what reached it: a
 * refused request must not reach the node at all.
 */
describe('the control endpoint refuses parameters it does not take', () => {
  const reached: string[] = []
  const phoenix = {
    send: async (name: string, _payload: Uint8Array, options: { ack: boolean; routeWaitMs: number; ackTimeoutMs?: number; messageId?: number }) => {
      reached.push(`send ${name} ack=${options.ack} wait=${options.routeWaitMs}${options.ackTimeoutMs !== undefined ? ` ackTimeout=${options.ackTimeoutMs}` : ''}${options.messageId !== undefined ? ` id=${options.messageId}` : ''}`)
      return { messageId: 7 }
    },
    resolve: () => undefined,
    routes: () => [],
    // 'taken' stands for a name another node holds: the claim is refused.
    addName: (name: string) => reached.push(`add ${name}`) > 0 && name !== 'taken',
    removeName: (name: string) => reached.push(`remove ${name}`),
    names: [],
  }
  const endpoint = serveStandIn(phoenix)

  const post = async (path: string) => {
    const res = await fetch(`${endpoint.base()}${path}`, { method: 'POST', body: 'hi' })
    return { status: res.status, body: (await res.json()) as { error?: string; message?: string } }
  }

  it('a misspelt parameter is refused, naming it and what the request takes, and nothing is sent', async () => {
    reached.length = 0
    const typo = await post('/send?name=x&waitms=0')
    expect(typo.status).toBe(400)
    expect(typo.body.message).toBe('unknown parameter "waitms": POST /send takes name, ack, waitMs, ackTimeoutMs, messageId')
    const routes = await fetch(`${endpoint.base()}/routes?all=1`)
    expect(routes.status).toBe(400)
    expect(((await routes.json()) as { message: string }).message).toBe('unknown parameter "all": GET /routes takes no parameters')
    expect(reached).toEqual([])
  })

  it('ack is 0 or 1, a value given is not empty, and a well-formed request still goes through', async () => {
    reached.length = 0
    expect((await post('/send?name=x&ack=2')).body.message).toBe('ack must be 0 or 1, got "2"')
    expect((await post('/send?name=x&ack=true')).status).toBe(400)
    // The wait for an ack bounded per request (it was the node's 10 s); only an acked send waits for one.
    expect((await post('/send?name=x&ackTimeoutMs=500')).body.message).toBe('ackTimeoutMs is the wait for an acknowledgement: it needs ack=1')
    expect((await post('/send?name=x&ack=1&ackTimeoutMs=0')).body.message).toBe('ackTimeoutMs must be an integer in [1, 600000], got "0"')
    expect((await post('/send?name=x&messageId=0')).body.message).toBe('messageId must be an integer in [1, 4294967295], got "0"')
    // One id is one message: a stream of many takes none.
    expect((await post('/send-stream?name=x&messageId=5')).body.message).toBe('unknown parameter "messageId": POST /send-stream takes name, ack, waitMs, ackTimeoutMs')
    expect((await post('/names?add=')).body.message).toBe('add is empty: POST /names needs a value for it')
    expect((await post('/send?name=')).body.message).toBe('name is empty: POST /send needs a value for it')
    expect((await post('/send')).body.message).toBe('send needs ?name=<logical name>')
    // Nothing to do was 200 {"added":0}: a script that built its query wrong heard success.
    expect(await post('/hubs')).toEqual({ status: 400, body: { error: 'INVALID_INPUT', message: 'POST /hubs needs ?add=<multiaddr> (repeatable)', field: 'add' } })
    expect((await post('/names')).body.message).toBe('POST /names needs ?add=<name> or ?remove=<name> (each repeatable)')
    expect(reached).toEqual([])
    const ok = await post('/send?name=x&ack=0&waitMs=5')
    expect(ok.status).toBe(200)
    expect((await post('/send?name=x&ack=1&ackTimeoutMs=500')).status).toBe(200)
    expect((await post('/send?name=x&messageId=42')).status).toBe(200)
    expect(await post('/names?add=a&remove=b')).toMatchObject({ status: 200, body: { refused: [] } })
    expect(await post('/names?add=taken')).toMatchObject({ status: 200, body: { refused: ['taken'] } })
    expect(reached).toEqual(['send x ack=false wait=5', 'send x ack=true wait=10000 ackTimeout=500', 'send x ack=false wait=10000 id=42', 'add a', 'remove b', 'add taken'])
    // A name no node can hold: GET /messages waited for it for good; now 400 before the stream starts.
    const bidi = await fetch(`${endpoint.base()}/messages?name=${encodeURIComponent('w\u202e2')}`)
    expect(bidi.status).toBe(400)
    expect(((await bidi.json()) as { message: string }).message).toMatch(/^name must not contain control characters, format characters .*, got "w\\u202e2"$/)
    expect((await fetch(`${endpoint.base()}/messages?name=${'n'.repeat(257)}`)).status).toBe(400)
    expect((await fetch(`${endpoint.base()}/messages?name=${encodeURIComponent('@x')}`)).status).toBe(400)
    // A path the endpoint does not serve is still answered 404 with the usage, whatever its query.
    expect((await fetch(`${endpoint.base()}/nope?x=1`)).status).toBe(404)
  })

  it('every refusal names its parameter in `field`, as a transport error does (only some did)', async () => {
    reached.length = 0
    const field = async (path: string) => ((await post(path)).body as { field?: string }).field
    const cases: [string, string][] = [
      ['/send?name=x&waitms=0', 'waitms'],
      ['/send?name=', 'name'],
      ['/send', 'name'],
      ['/send?name=x&ack=2', 'ack'],
      ['/send?name=x&waitMs=-1', 'waitMs'],
      ['/send?name=x&ackTimeoutMs=500', 'ackTimeoutMs'],
      ['/send?name=x&messageId=0', 'messageId'],
      ['/names', 'add'],
      ['/names?remove=a%09b', 'remove'],
    ]
    for (const [path, name] of cases) expect(await field(path), path).toBe(name)
    const messages = await fetch(`${endpoint.base()}/messages?name=${encodeURIComponent('@x')}`)
    expect(((await messages.json()) as { field?: string }).field).toBe('name')
    const big = await fetch(`${endpoint.base()}/send?name=x`, { method: 'POST', body: new Uint8Array(CONTROL_BODY_BYTES_MAX + 1) })
    expect([big.status, ((await big.json()) as { field?: string }).field]).toEqual([413, 'body'])
    expect(reached).toEqual([])
  })

  it('a path it serves under another method is 405, naming the method (a GET /send was 404 with the usage)', async () => {
    reached.length = 0
    const get = await fetch(`${endpoint.base()}/send?name=x`)
    expect([get.status, get.headers.get('allow'), await get.json()]).toEqual([405, 'POST', { error: 'METHOD_NOT_ALLOWED', message: 'GET /send: /send takes POST' }])
    const del = await fetch(`${endpoint.base()}/names?remove=a`, { method: 'DELETE' })
    expect([del.status, del.headers.get('allow')]).toEqual([405, 'POST'])
    expect((await post('/routes')).body).toEqual({ error: 'METHOD_NOT_ALLOWED', message: 'POST /routes: /routes takes GET' })
    expect(reached).toEqual([])
  })
})

describe('POST /names is all or nothing, POST /hubs says what it did', () => {
  // A stand-in node that holds at most 3 names and throws past them, as PhoenixNode.addName does.
  const held: string[] = []
  const claimed: string[] = []
  const hubs: string[] = []
  /** Every addName call: a request past the limit must make none (each one moves the node's record on). */
  const addCalls: string[] = []
  const phoenix = {
    addHub: (hub: string) => {
      if (!hub.startsWith('/')) throw Object.assign(new Error(`hub ${JSON.stringify(hub)} is not a multiaddr`), { name: 'PhoenixTransportError', code: 'INVALID_INPUT' })
      hubs.push(hub)
    },
    addName: (name: string) => {
      addCalls.push(name)
      // A name another node holds is refused, but claimed: it would be taken once its holder goes.
      if (name.startsWith('taken')) {
        claimed.push(name)
        return false
      }
      if (name.startsWith('@')) throw Object.assign(new Error(`name: ${JSON.stringify(name)}: names starting with '@' are reserved for the overlay`), { name: 'PhoenixTransportError', code: 'INVALID_INPUT' })
      if (held.length >= 3) throw Object.assign(new Error('name: 4 names, at most 3 per node (namesPerNodeMax)'), { name: 'PhoenixTransportError', code: 'INVALID_INPUT' })
      held.push(name)
      return true
    },
    removeName: (name: string) => {
      held.splice(held.indexOf(name), held.includes(name) ? 1 : 0)
      claimed.splice(claimed.indexOf(name), claimed.includes(name) ? 1 : 0)
    },
    get names() {
      return [...held]
    },
  }
  const endpoint = serveStandIn(phoenix, 3)
  const post = async (query: string) => {
    const res = await fetch(`${endpoint.base()}/names?${query}`, { method: 'POST' })
    return { status: res.status, body: (await res.json()) as { message?: string; names?: string[] } }
  }

  it('a request that fails part way leaves the names as they were (the names added before the failure were kept, under a 400)', async () => {
    expect(await post('add=a')).toMatchObject({ status: 200, body: { names: ['a'] } })
    addCalls.length = 0
    // Past the limit: refused before a single name is added (the CLI audit: 70 names asked moved
    // the record's seq from 8 to 256, each added and taken back, and the answer said "65 names").
    const over = await post('add=b&add=c&add=d&add=b&remove=a')
    expect(over).toEqual({ status: 400, body: { error: 'LIMIT_EXCEEDED', message: 'add: 4 names (1 held and 3 added; removes come after the adds), at most 3 per node (namesPerNodeMax); nothing was changed', field: 'add' } })
    expect([held, addCalls]).toEqual([['a'], []])
    // A name that no node can hold, among good ones: refused before anything is added.
    expect((await post(`add=b&add=${encodeURIComponent('y\u0000')}`)).body.message).toMatch(/^add: name .*; nothing was changed$/)
    expect([held, addCalls]).toEqual([['a'], []])
    // A failure found only by the node (a reserved name): the names added before it go.
    expect((await post('add=b&add=@x')).body.message).toBe(`name: "@x": names starting with '@' are reserved for the overlay; nothing was changed`)
    expect([held, addCalls]).toEqual([['a'], ['b', '@x']])
    // A refused name's claim goes too: it took the name later, once its holder left.
    expect((await post('add=taken-x&add=b&add=@x')).status).toBe(400)
    expect([held, claimed]).toEqual([['a'], []])
    // A name to remove that no node can hold: refused before anything is added.
    expect((await post(`add=b&remove=${encodeURIComponent('x\u202e')}`)).body.message).toMatch(/^remove: name must not contain .*, got "x\\u202e"; nothing was changed$/)
    expect(held).toEqual(['a'])
    expect(await post('add=b&add=c&remove=a')).toMatchObject({ status: 200, body: { names: ['b', 'c'] } })
  })

  it('POST /hubs that fails part way says which hubs were added before the failure (a hub cannot be taken back)', async () => {
    const res = await fetch(`${endpoint.base()}/hubs?add=/ip4/10.0.0.1/tcp/7000&add=/ip4/10.0.0.2/tcp/7000&add=oops`, { method: 'POST' })
    expect(res.status).toBe(400)
    expect(((await res.json()) as { message: string }).message).toBe('hub "oops" is not a multiaddr; added before it: /ip4/10.0.0.1/tcp/7000 /ip4/10.0.0.2/tcp/7000')
    expect(hubs).toEqual(['/ip4/10.0.0.1/tcp/7000', '/ip4/10.0.0.2/tcp/7000'])
  })
})

describe('the control endpoint refuses what web pages make a browser send', () => {
  const reached: string[] = []
  const phoenix = { addName: (name: string) => reached.push(`add ${name}`) > 0, removeName: () => undefined, routes: () => [], peers: () => [], topology: () => ({}), names: [] }
  const endpoint = serveStandIn(phoenix)

  /** A raw request with exactly these headers (fetch would set Origin and Host itself). */
  const raw = (method: string, path: string, headers: Record<string, string>) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: endpoint.port(), method, path, headers, setHost: headers.host === undefined }, (res) => {
        let body = ''
        res.on('data', (d: Buffer) => (body += d.toString('utf8')))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
      })
      req.on('error', reject)
      req.end(method === 'POST' ? 'x' : undefined)
    })

  it('a POST from another origin, a cross-site GET and a rebound Host are refused 403 and reach nothing; the CLI, curl and the overlay page are answered', async () => {
    reached.length = 0
    // A form or fetch on any site: a "simple" cross-origin POST, sent without a preflight.
    const csrf = await raw('POST', '/names?add=planted', { origin: 'http://evil.example', 'content-type': 'text/plain' })
    expect(csrf.status).toBe(403)
    expect(JSON.parse(csrf.body)).toEqual({ error: 'FORBIDDEN', message: 'a request from a web page (Origin: http://evil.example) is refused: the control endpoint answers programs on this machine, and a page could otherwise send as this node' })
    expect((await raw('POST', '/names?add=planted', { origin: 'null' })).status).toBe(403)
    // An <img> pointing at the inbox: no Origin, but the browser says where it comes from.
    expect((await raw('GET', '/messages?count=1', { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors' })).status).toBe(403)
    // DNS rebinding: a name of the attacker's resolved to 127.0.0.1, the page then same-origin with it.
    expect((await raw('GET', '/status', { host: `rebound.example:${endpoint.port()}`, 'sec-fetch-site': 'same-origin' })).status).toBe(403)
    expect(reached).toEqual([])
    // What programs send (no Origin, no Sec-Fetch-*, Host the loopback address), and the page's own requests.
    expect((await raw('POST', '/names?add=mine', {})).status).toBe(200)
    expect((await raw('POST', '/names?add=typed', { host: `localhost:${endpoint.port()}` })).status).toBe(200)
    expect((await raw('GET', '/topology', { origin: `http://127.0.0.1:${endpoint.port()}`, 'sec-fetch-site': 'same-origin' })).status).toBe(200)
    expect((await raw('GET', '/', { 'sec-fetch-site': 'none' })).status).toBe(200)
    expect(reached).toEqual(['add mine', 'add typed'])
  })
})
