import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { REFUSED_CHARACTERS_RULE } from '@phoenix-overlay/core'
import { CONTROL_BODY_BYTES_MAX } from '../src/constants.ts'
import { callControl } from '../src/control-client.ts'
import { NO_LINES_NOTE } from '../src/commands/send.ts'
import { freePort, phoenix, startNode, tempDir, type Run, type Started } from './helpers.ts'

/** A port nothing listens on right now. */
/**
 * The command failed with exactly one line on stderr, and that line is `expected`; with status
 * `code`: 2 for a configuration error (the command line itself is wrong), 1 for any other failure.
 */
function failsWith(run: Run, expected: string | RegExp, code: 1 | 2 = 1): void {
  expect(run.code, run.stderr).toBe(code)
  const lines = run.stderr.trim().split('\n')
  expect(lines).toHaveLength(1)
  if (typeof expected === 'string') expect(lines[0]).toBe(expected)
  else expect(lines[0]).toMatch(expected)
}

describe("the CLI's edges", () => {
  const dir = tempDir('edges')
  const socket = join(dir, 'b.sock')
  let port: number
  let listenPort: string
  let aPid: string
  const nodes: Started[] = []

  beforeAll(async () => {
    port = await freePort()
    const a = startNode(['--name', 'edge-a', '--control', String(port)])
    nodes.push(a)
    const address = (await a.waitFor(/listening on (\S+)/))[1]!
    listenPort = /\/tcp\/(\d+)/.exec(address)![1]!
    aPid = String(a.pid)
    const b = startNode(['--name', 'edge-b', '--name', 'rank-0000001', '--name', 'a-rather-long-job-name-for-the-table', '--hub', address, '--control', socket])
    nodes.push(b)
    const [, onSocket] = await Promise.all([a.waitFor(/control endpoint on/), b.waitFor(/control endpoint on (.*)$/m)])
    // A path says it is one (a mistyped port, "74o1", is a socket path too).
    expect(onSocket[1]).toBe(`unix socket ${socket}`)
  })
  afterAll(() => {
    for (const n of nodes) n.killGroup()
  })

  it('stdin is text, its final newline dropped (as --lines drops each line\'s); --file - sends the bytes exactly', async () => {
    // `echo hi | phoenix send` sent "hi\n", which recv printed with a blank line after it.
    for (const input of ['hi\n', 'hi\r\n', 'hi']) expect((await phoenix(['send', '--control', socket, '--ack', 'edge-a'], input)).code).toBe(0)
    expect((await phoenix(['send', '--control', socket, '--ack', 'edge-a'], 'two\n\n')).code).toBe(0)
    expect((await phoenix(['send', '--control', socket, '--ack', '--file', '-', 'edge-a'], 'hi\n')).code).toBe(0)
    expect((await phoenix(['send', '--control', socket, '--ack', '--lines', 'edge-a'], 'hi\n')).code).toBe(0)
    const got = await phoenix(['recv', '--control', String(port), '--count', '6', '--json'])
    const texts = got.stdout.trim().split('\n').map((line) => (JSON.parse(line) as { text: string }).text)
    expect(texts).toEqual(['hi', 'hi', 'hi', 'two\n', 'hi\n', 'hi'])
    expect((await phoenix(['send', '--help'])).stdout.replace(/\s+/g, ' ')).toContain('stdin is read to the end as text (its final newline dropped)')
  })

  it('send --lines with an empty input says on stderr that nothing was sent, and succeeds', async () => {
    const run = await phoenix(['send', '--control', socket, '--lines', 'edge-a'], '')
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toBe('')
    expect(run.stderr).toBe(NO_LINES_NOTE)
    const json = await phoenix(['send', '--control', socket, '--lines', '--json', 'edge-a'], '')
    expect(json.code).toBe(0)
    expect(JSON.parse(json.stdout)).toMatchObject({ done: true, sent: 0 })
    expect(json.stderr).toBe(NO_LINES_NOTE)
    // One empty line is one (empty) message: no note.
    const one = await phoenix(['send', '--control', socket, '--lines', '--ack', 'edge-a'], '\n')
    expect(one.stdout).toMatch(/^acknowledged by edge-a/)
    expect(one.stderr).toBe('')
    expect((await phoenix(['recv', '--control', String(port), '--count', '1', '--json'])).stdout).toContain('"text":""')
  })

  it('send takes the message from stdin or --file, past the ~128 KiB an argument allows', async () => {
    const big = randomBytes(200 * 1024).toString('base64')
    const viaStdin = await phoenix(['send', '--control', socket, '--ack', 'edge-a'], big)
    expect(viaStdin.stdout).toMatch(/^acknowledged by edge-a/)
    const file = join(dir, 'message.bin')
    writeFileSync(file, big)
    const viaFile = await phoenix(['send', '--control', socket, '--ack', '--file', file, 'edge-a'])
    expect(viaFile.stdout).toMatch(/^acknowledged by edge-a/)
    const got = await phoenix(['recv', '--control', String(port), '--count', '2'])
    expect(got.stdout).toBe(`${big}\n${big}\n`)
  })

  it('a message over the control endpoint cap fails in one line naming the cap', async () => {
    const file = join(dir, 'huge.bin')
    writeFileSync(file, new Uint8Array(CONTROL_BODY_BYTES_MAX + 1))
    // A file that can never be sent is a command-line error (exit 2); stdin's content is not (exit 1).
    const cap = `the control endpoint's ${CONTROL_BODY_BYTES_MAX} bytes per message (CONTROL_BODY_BYTES_MAX)`
    failsWith(await phoenix(['send', '--control', socket, '--file', file, 'edge-a']), `phoenix: --file ${file}: over ${cap}`, 2)
    failsWith(await phoenix(['send', '--control', socket, '--lines', '--file', file, 'edge-a']), `phoenix: --file ${file} line 1: ${CONTROL_BODY_BYTES_MAX + 1} bytes, over ${cap}`, 2)
    failsWith(await phoenix(['send', '--control', socket, 'edge-a'], readFileSync(file)), `phoenix: stdin: over ${cap}`, 1)
  })

  it('send says whether the message was acknowledged; --wait-ms 0 fails at once when there is no route', async () => {
    expect((await phoenix(['send', '--control', socket, 'edge-a', 'hi'])).stdout).toMatch(/^sent to edge-a \(12D3…\w{8}, 1 hop\) in [\d.]+ ms \(message \d+\); not acknowledged/)
    const t0 = performance.now()
    failsWith(await phoenix(['send', '--control', socket, '--wait-ms', '0', 'nobody', 'hi']), /^phoenix: send to nobody: NO_ROUTE: no route to a node named "nobody" after waiting 0 ms: no node this one knows holds that name: .* \(--wait-ms/)
    // The default wait is 10 s; the whole command (Node start included) takes a fraction of it.
    expect(performance.now() - t0).toBeLessThan(8_000)
    failsWith(await phoenix(['send', '--control', socket, '--wait-ms', 'soon', 'x', 'y']), /^phoenix: option '--wait-ms <ms>' argument 'soon' is invalid/, 2)
    // --lines --json: the endpoint's failure line is printed too (it went only to stderr, reworded).
    const lines = await phoenix(['send', '--control', socket, '--lines', '--json', '--wait-ms', '0', 'nobody'], 'a\n')
    failsWith(lines, /^phoenix: send to nobody, line 1: NO_ROUTE: /)
    expect(JSON.parse(lines.stdout)).toMatchObject({ error: 'NO_ROUTE', index: 1 })
    // One message with --json: the endpoint's failure answer too (stdout was empty), then the line and status as without.
    const one = await phoenix(['send', '--control', socket, '--json', '--wait-ms', '0', 'nobody', 'hi'])
    failsWith(one, /^phoenix: send to nobody: NO_ROUTE: /)
    expect(JSON.parse(one.stdout)).toMatchObject({ error: 'NO_ROUTE', message: expect.stringContaining('nobody') })
    await phoenix(['recv', '--control', String(port), '--count', '1'])
  })

  it('send --ack --ack-timeout-ms bounds the wait for the acknowledgement (it was the node\'s 10 s)', async () => {
    failsWith(await phoenix(['send', '--control', socket, '--ack-timeout-ms', '300', 'edge-a', 'hi']), 'phoenix: --ack-timeout-ms: has no effect without --ack', 2)
    // edge-a's node stopped (SIGSTOP, the Node process itself, not pnpm's launcher): its link stays up, no ack comes.
    // Stopped only around each send: a neighbour silent for deadAfterSilenceMs (6 s) is withdrawn,
    // and on a loaded machine two CLI runs in one stop came near it (the retry found NO_ROUTE).
    const { pid } = (await (await fetch(`http://127.0.0.1:${port}/status`)).json()) as { pid: number }
    const whileStopped = async (args: string[]) => {
      process.kill(pid, 'SIGSTOP')
      try {
        return await phoenix(args)
      } finally {
        process.kill(pid, 'SIGCONT')
      }
    }
    const t0 = performance.now()
    const run = await whileStopped(['send', '--control', socket, '--ack', '--ack-timeout-ms', '300', 'edge-a', 'hi'])
    failsWith(run, /^phoenix: send to edge-a: ACK_TIMEOUT: no acknowledgement from 12D3\w+ for message \d+ to "edge-a" within 300 ms; .*\(--ack-timeout-ms sets how long to wait for the acknowledgement; a retry with --message-id and that message's id is delivered at most once\)$/)
    // Node's start included; the node's own ackTimeoutMs is 10 s.
    expect(performance.now() - t0).toBeLessThan(8_000)
    // The retry the line suggests: the same id again, one delivery (without it, the CLI could not retry safely).
    const id = /for message (\d+)/.exec(run.stderr)![1]!
    failsWith(await whileStopped(['send', '--control', socket, '--ack', '--ack-timeout-ms', '300', '--message-id', id, 'edge-a', 'hi']), /ACK_TIMEOUT/)
    // Delivered once after the receiver resumed: the one message, and nothing else waiting.
    expect((await phoenix(['recv', '--control', String(port), '--count', '1'])).stdout).toBe('hi\n')
    const { text } = await callControl({ port }, 'GET', '/status')
    expect(JSON.parse(text)).toMatchObject({ inbox: { messages: 0 } })
  })

  it('every start-up failure is one line naming its option; status 2 when the command line is wrong, 1 when a retry may pass', async () => {
    const missing = join(dir, 'no', 'such', 'node.key')
    const isDir = join(dir, 'keydir')
    mkdirSync(isDir)
    const garbage = join(dir, 'garbage.key')
    writeFileSync(garbage, 'not a key')
    const nobody = join(dir, 'nobody.sock')
    // One byte past what the OS takes for a unix socket path (107 on Linux): `routes` crashed with a stack.
    const tooLong = join(dir, 'x'.repeat(Math.max(1, 108 - join(dir, '').length)))
    const tooLongLine = `phoenix: option '--control <port|socket>' argument '${tooLong}' is invalid. a unix socket path is at most 107 bytes (SOCKET_PATH_BYTES_MAX, the OS's limit), and this one is ${Buffer.byteLength(tooLong)}: give a shorter path, e.g. a relative one`
    const cases: [string[], string | RegExp, 1 | 2][] = [
      [['node', '--listen', `/ip4/127.0.0.1/tcp/${listenPort}`], `phoenix: --listen /ip4/127.0.0.1/tcp/${listenPort}: address already in use (another process listens there; pick another port, or /tcp/0 for any free one)`, 1],
      [['node', '--listen', '/ip4/127.0.0.1/udp/9/quic'], 'phoenix: --listen /ip4/127.0.0.1/udp/9/quic: No transport was configured to listen on this address', 2],
      [['node', '--control', String(port)], `phoenix: --control ${port}: 127.0.0.1:${port} is in use by phoenix node pid ${aPid}`, 1],
      [['node', '--key', missing], `phoenix: --key ${missing}: directory ${join(dir, 'no', 'such')} does not exist`, 2],
      [['node', '--key', isDir], `phoenix: --key ${isDir}: not a file (a directory)`, 2],
      [['node', '--key', garbage], new RegExp(`^phoenix: --key ${garbage}: not a libp2p private key \\(9 bytes; `), 2],
      [['node', '--hub', 'example.com:7000'], /^phoenix: --hub example.com:7000: not a multiaddr/, 2],
      [['node', '--psk', garbage], new RegExp(`^phoenix: --psk ${garbage}: not a swarm key \\(first line is "not a key"; expected /key/swarm/psk/1\\.0\\.0/`), 2],
      [['node', '--mode', 'fast'], /^phoenix: option '--mode <mode>' argument 'fast' is invalid/, 2],
      [['node', '--no-such-flag'], "phoenix: unknown option '--no-such-flag'", 2],
      // The parser's suggestion came on a second line (a user's audit).
      [['node', '--hubs', 'x'], "phoenix: unknown option '--hubs' (Did you mean --hub?)", 2],
      [['node', '--allow', 'notapeer'], /^phoenix: --allow "notapeer" is not a peer id/, 2],
      // It ended with the id parser's "Please pass a multibase decoder for strings that do not start with "1" or "Q"".
      [['node', '--hub', '/ip4/127.0.0.1/tcp/1/p2p/notapeer'], 'phoenix: --hub "/ip4/127.0.0.1/tcp/1/p2p/notapeer" names "notapeer", which is not a peer id (one such as 12D3KooW…, as a node prints it at start)', 2],
      [['node', '--listen', '/ip4/127.0.0.1/tcp/1', '--listen', '/ip4/127.0.0.1/tcp/1'], 'phoenix: --listen "/ip4/127.0.0.1/tcp/1" is given twice', 2],
      [['node', '--allow', '12D3KooWExve7pDCH7VePy7XJiiyMpVmfqHpRkpFDicQsBnnyW5V', '--hub', '/ip4/127.0.0.1/tcp/1/p2p/12D3KooWREypnAYc661obaej18tFo1acauwMbFyTiyA3k5vgvDSP'], /^phoenix: --hub "\/ip4\/127\.0\.0\.1\/tcp\/1\/p2p\/12D3KooWREyp\w+" is peer 12D3KooWREyp\w+, which --allow does not list: the node would never dial it \(add the peer to --allow\)$/, 2],
      [['send', '--control', nobody, '--file', join(dir, 'no-such-message'), 'x'], `phoenix: --file ${join(dir, 'no-such-message')}: cannot read it (ENOENT)`, 2],
      [['send', '--control', nobody, '--lines', 'x', 'inline'], 'phoenix: --lines: sends each line of the input (stdin or --file) as a message; give no <message> argument with it', 2],
      // Refused before asking a node (none answers here): the node's answer named its endpoint, "POST /send needs a value for it".
      [['send', '--control', nobody, '', 'hi'], "phoenix: <name>: must be a non-empty string, a name a node holds (phoenix members '*' lists them)", 2],
      [['routes', '--control', tooLong], tooLongLine, 2],
      // A name with a control character: no node holds one, and printed raw it rewrote terminals.
      [['node', '--name', 'tab\there'], `phoenix: --name: a name ${REFUSED_CHARACTERS_RULE}, got "tab\\there"`, 2],
      [['send', '--control', nobody, '\u001b[31mred', 'hi'], `phoenix: <name> "\\u001b[31mred" ${REFUSED_CHARACTERS_RULE}`, 2],
      // A bidi override reordered the tables' lines; a zero-width space made a lookalike of another's name. Shown escaped.
      [['node', '--name', 'w2\u202e1'], `phoenix: --name: a name ${REFUSED_CHARACTERS_RULE}, got "w2\\u202e1"`, 2],
      [['send', '--control', nobody, 'w2\u200b', 'hi'], `phoenix: <name> "w2\\u200b" ${REFUSED_CHARACTERS_RULE}`, 2],
      [['node', '--control', tooLong], tooLongLine, 2],
      // recv waited for good (with a warning) for a name no node can hold.
      [['recv', '--control', nobody, '--name', 'a\tb'], `phoenix: --name: ${REFUSED_CHARACTERS_RULE}, got "a\\tb"`, 2],
      [['recv', '--control', nobody, '--name', 'ok', '--name', ''], 'phoenix: --name: must be a non-empty string', 2],
      // A user's audit: it said the node does not hold "@x" yet, and waited for good (no node may hold it).
      [['recv', '--control', nobody, '--name', '@x'], `phoenix: --name: "@x": names starting with '@' are reserved for the overlay, and no message is sent to one`, 2],
      // A value the node refuses (400) is a command-line error too: it exited 1.
      [['members', '--control', socket, ''], 'phoenix: INVALID_INPUT: pattern must be a non-empty string, like "worker/*"', 2],
      [['send', '--control', socket, 'n'.repeat(300), 'hi'], `phoenix: send to ${'n'.repeat(300)}: INVALID_INPUT: name is 300 characters, more than 256 (nameLengthMax)`, 2],
      // Number() read these as 100 and 16 processes.
      [['sim', 'simulations/scenarios/paper-3-subnets.json', '--nodes', '1e2'], /^phoenix: option '--nodes <n>' argument '1e2' is invalid\. --nodes must be an integer in \[1, 20000\], got "1e2"$/, 2],
      [['sim', 'simulations/scenarios/paper-3-subnets.json', '--nodes', '0x10'], /^phoenix: option '--nodes <n>' argument '0x10' is invalid/, 2],
      [['routes', '--control', nobody], `phoenix: --control ${nobody}: no node answers on unix socket ${nobody} (is \`phoenix node --control ${nobody}\` running?)`, 1],
      // A mistyped port is a socket path: the line said "no node answers on 74o1".
      [['routes', '--control', '74o1'], 'phoenix: --control 74o1: no node answers on unix socket 74o1 (is `phoenix node --control 74o1` running?)', 1],
    ]
    // Five at a time: all at once, two dozen Node starts on a loaded 2-core machine passed the
    // helper's 30 s per command (a CI run beside other work).
    for (let i = 0; i < cases.length; i += 5) {
      const batch = cases.slice(i, i + 5)
      const runs = await Promise.all(batch.map(([args]) => phoenix(args)))
      runs.forEach((run, j) => failsWith(run, batch[j]![1], batch[j]![2]))
    }
  })

  it('a private network key read from a pipe (--psk <(…)) starts the node', async () => {
    // A read of a FIFO leaves Node's shared stats array saying "FIFO", and Node's realpathSync then
    // stopped resolving symlinks: the transport, imported next, resolved under node_modules.
    const fifo = join(dir, 'psk.fifo')
    execFileSync('mkfifo', [fifo])
    const node = startNode(['--psk', fifo])
    try {
      // Written from libuv's pool: the open blocks there until the node opens the pipe to read it.
      await writeFile(fifo, `/key/swarm/psk/1.0.0/\n/base16/\n${randomBytes(32).toString('hex')}\n`)
      await node.waitFor(/control endpoint on|listening on/)
      expect(node.stderr).not.toMatch(/node_modules/)
    } finally {
      if (node.child.exitCode === null) process.kill(node.pid, 'SIGTERM')
      await node.exited
    }
  })

  it('--version prints the package version', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
    expect((await phoenix(['--version'])).stdout).toBe(`${version}\n`)
  })

  it('help shows the defaults that say something, and no empty list as one', async () => {
    const [node, send] = await Promise.all([phoenix(['node', '--help']), phoenix(['send', '--help'])])
    expect([node.code, send.code]).toEqual([0, 0])
    // Six repeatable options said "(default: [])".
    expect(node.stdout).toContain('--hub <multiaddr>')
    expect(node.stdout).not.toContain('(default: [])')
    expect(send.stdout.replace(/\s+/g, ' ')).toContain('(0: fail at once if there is none) (default: 10000)')
  })

  it('routes and peers fit in 100 columns and show names', async () => {
    const routes = (await phoenix(['routes', '--control', String(port)])).stdout
    const peers = (await phoenix(['peers', '--control', String(port)])).stdout
    for (const line of [...routes.split('\n'), ...peers.split('\n')]) expect([...line].length).toBeLessThanOrEqual(100)
    expect(routes).toMatch(/^DESTINATION +NAMES +NEXT HOP +HOPS +SEQ$/m)
    expect(routes).toMatch(/^12D3…\w{8} +edge-b,rank-0000001,a-rathe… +direct +1 +\d+$/m)
    expect(peers).toMatch(/^12D3…\w{8} +edge-b,rank-0000001,a-rather-long-job-name-for-the-table$/m)
    const json = JSON.parse((await phoenix(['peers', '--control', String(port), '--json'])).stdout) as { id: string; names: string[] }[]
    expect(json).toEqual([{ id: expect.stringMatching(/^12D3KooW/), names: ['edge-b', 'rank-0000001', 'a-rather-long-job-name-for-the-table'] }])
  })
})
