import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CONTROL_BODY_BYTES_MAX } from '../src/constants.ts'
import { openControlStream, type ControlEndpoint } from '../src/control-client.ts'
import type { MessageLine } from '../src/message-line.ts'
import { encodeFrame, FRAME_HEADER_BYTES, FrameError, FrameReader } from '../src/send-stream.ts'
import { phoenix, NODE_TS, PHOENIX_JS, REPO, Started, startNode, tempDir } from './helpers.ts'

/** `phoenix <args>` with a stdin the test writes to. */
const withInput = (args: string[]) => new Started(spawn(process.execPath, [...NODE_TS, PHOENIX_JS, ...args], { cwd: REPO, detached: true, stdio: ['pipe', 'pipe', 'pipe'] }))

/** One streaming request with `body` as its whole body; the answer's lines, parsed. */
async function stream(endpoint: ControlEndpoint, query: string, body: Uint8Array): Promise<{ status: number; lines: Record<string, unknown>[] }> {
  const { body: request, response } = openControlStream(endpoint, 'POST', `/send-stream?${query}`)
  request.end(body)
  const res = await response
  const chunks: Buffer[] = []
  for await (const chunk of res) chunks.push(chunk as Buffer)
  const text = Buffer.concat(chunks).toString('utf8').trim()
  return { status: res.statusCode ?? 0, lines: text === '' ? [] : text.split('\n').map((l) => JSON.parse(l) as Record<string, unknown>) }
}

const concat = (parts: Uint8Array[]) => new Uint8Array(Buffer.concat(parts))

describe('the frame reader', () => {
  it('finds the same frames however the bytes are cut', () => {
    const seed = Number(process.env.PHOENIX_SEED ?? Date.now() % 1_000_000)
    console.log(`frame reader property: PHOENIX_SEED=${seed}`)
    let state = seed
    const random = (n: number) => {
      state = (state * 1103515245 + 12345) % 2 ** 31
      return Math.floor(state / 65536) % n
    }
    for (let round = 0; round < 50; round++) {
      const payloads = Array.from({ length: 1 + random(20) }, () => new Uint8Array(Array.from({ length: random(300) }, () => random(256))))
      const bytes = concat(payloads.map(encodeFrame))
      const reader = new FrameReader(1000)
      const got: Uint8Array[] = []
      for (let at = 0; at < bytes.length; ) {
        const cut = Math.min(bytes.length, at + 1 + random(40))
        got.push(...reader.push(bytes.slice(at, cut)).map((p) => p.slice()))
        at = cut
      }
      reader.end()
      expect(got).toEqual(payloads)
    }
  })

  it('refuses a length over the cap before reading it, and a body that ends inside a frame', () => {
    const reader = new FrameReader(10)
    const header = new Uint8Array(FRAME_HEADER_BYTES)
    new DataView(header.buffer).setUint32(0, 11)
    expect(reader.push(encodeFrame(new Uint8Array(10)))).toHaveLength(1)
    expect(() => reader.push(header)).toThrow(/message 2 is 11 bytes, more than the control endpoint's 10/)
    // The frames ahead of a refused one in the same chunk are still returned; the refusal comes next.
    const mixed = new FrameReader(10)
    expect(mixed.push(concat([encodeFrame(new Uint8Array(3)), header]))).toHaveLength(1)
    expect(() => mixed.end()).toThrow(/message 2 is 11 bytes/)
    const short = new FrameReader(10)
    short.push(encodeFrame(new Uint8Array(5)).subarray(0, 7))
    expect(() => short.end()).toThrow(FrameError)
    // The payload bytes that came, not those and the 4-byte length (it said "7 bytes of it").
    expect(() => short.end()).toThrow(/^the body ends inside message 1: 3 of its 5 payload bytes came$/)
    const inLength = new FrameReader(10)
    inLength.push(encodeFrame(new Uint8Array(5)).subarray(0, 2))
    expect(() => inLength.end()).toThrow(/^the body ends inside message 1's 4-byte length \(2 of its bytes came\)$/)
  })
})

describe('the streaming send (POST /send-stream, send --lines)', () => {
  const dir = tempDir('stream')
  const fromSocket = join(dir, 'from.sock')
  const toSocket = join(dir, 'to.sock')
  const from: ControlEndpoint = { socketPath: fromSocket }
  const nodes: Started[] = []

  beforeAll(async () => {
    const sink = startNode(['--name', 'sink', '--control', toSocket])
    nodes.push(sink)
    const address = (await sink.waitFor(/listening on (\S+)/))[1]!
    const source = startNode(['--name', 'source', '--hub', address, '--control', fromSocket])
    nodes.push(source)
    await Promise.all([sink.waitFor(/control endpoint on/), source.waitFor(/control endpoint on/)])
  })
  afterAll(() => {
    for (const n of nodes) n.killGroup()
  })

  async function received(count: number): Promise<MessageLine[]> {
    const run = await phoenix(['recv', '--control', toSocket, '--count', String(count), '--json'])
    return run.stdout.trim().split('\n').map((l) => JSON.parse(l) as MessageLine)
  }

  it('sends every frame of one request as its own message, binary as is, in order, a line each', async () => {
    const payloads = Array.from({ length: 200 }, (_, i) => new Uint8Array(randomBytes(i === 7 ? 0 : 1 + (i * 97) % 5000)))
    const { status, lines } = await stream(from, 'name=sink&ack=1&waitMs=20000', concat(payloads.map(encodeFrame)))
    expect(status).toBe(200)
    expect(lines).toHaveLength(201)
    expect(lines.slice(0, 200).map((l) => l.bytes)).toEqual(payloads.map((p) => p.length))
    for (const l of lines.slice(0, 200)) expect(l).toMatchObject({ sent: true, acked: true, name: 'sink' })
    expect(lines[200]).toMatchObject({ done: true, sent: 200, bytes: payloads.reduce((a, p) => a + p.length, 0) })
    const got = await received(200)
    expect(got.map((m) => (m.base64 !== undefined ? Buffer.from(m.base64, 'base64') : Buffer.from(m.text ?? '', 'utf8')))).toEqual(payloads.map((p) => Buffer.from(p)))
  })

  it('stops at the first failure with one error line naming the message; nothing after it is sent', async () => {
    const frames = concat([encodeFrame(new Uint8Array([1])), encodeFrame(new Uint8Array([2]))])
    const noRoute = await stream(from, 'name=nobody&waitMs=0', frames)
    expect(noRoute.lines).toEqual([expect.objectContaining({ error: 'NO_ROUTE', index: 1, sent: 0 })])
    const header = new Uint8Array(FRAME_HEADER_BYTES)
    new DataView(header.buffer).setUint32(0, CONTROL_BODY_BYTES_MAX + 1)
    const tooLarge = await stream(from, 'name=sink&ack=1', concat([frames, header, new Uint8Array(1000)]))
    expect(tooLarge.lines).toHaveLength(3)
    expect(tooLarge.lines[2]).toMatchObject({ error: 'INVALID_INPUT', field: 'body', index: 3, sent: 2 })
    expect(String(tooLarge.lines[2]!.message)).toMatch(/message 3 is 1048577 bytes, more than the control endpoint's 1048576/)
    const truncated = await stream(from, 'name=sink&ack=1', frames.subarray(0, frames.length - 1))
    expect(truncated.lines).toEqual([expect.objectContaining({ sent: true }), expect.objectContaining({ error: 'INVALID_INPUT', field: 'body', index: 2, sent: 1 })])
    expect((await received(3)).map((m) => m.text)).toEqual(['\u0001', '\u0002', '\u0001'])
  })

  it('send --lines streams: one line per message as it is sent, a failure as one line on stderr', async () => {
    const texts = Array.from({ length: 50 }, (_, i) => `line ${i}`)
    const sent = await phoenix(['send', '--control', fromSocket, '--lines', 'sink'], `${texts.join('\n')}\n`)
    expect(sent.stderr).toBe('')
    const out = sent.stdout.trim().split('\n')
    expect(out).toHaveLength(50)
    for (const line of out) expect(line).toMatch(/sent to sink \(12D3…\w{8}, 1 hop\) in [\d.]+ ms \(message \d+\); not acknowledged/)
    expect((await received(50)).map((m) => m.text)).toEqual(texts)
    const failed = await phoenix(['send', '--control', fromSocket, '--lines', '--wait-ms', '0', 'nobody'], 'a\nb\n')
    expect(failed.code).toBe(1)
    expect(failed.stdout).toBe('')
    expect(failed.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^phoenix: send to nobody, line 1: NO_ROUTE: .* \(--wait-ms sets how long to wait for a route\); nothing was sent$/)])
  })

  it('send --lines sends each line as it arrives, before the input ends, and fails at once when the node refuses', async () => {
    const send = withInput(['send', '--control', fromSocket, '--lines', '--ack', 'sink'])
    try {
      send.child.stdin!.write('first\n')
      await send.waitFor(/acknowledged by sink/)
      expect((await received(1))[0]!.text).toBe('first')
    } finally {
      send.child.stdin!.end()
    }
    expect(await send.exited).toBe(0)
    // A refusal ends the command even while its input stays open.
    const refused = withInput(['send', '--control', fromSocket, '--lines', '--wait-ms', '0', 'nobody'])
    refused.child.stdin!.write('x\n')
    expect(await refused.exited).toBe(1)
    expect(refused.stderr).toMatch(/NO_ROUTE/)
  })
})
