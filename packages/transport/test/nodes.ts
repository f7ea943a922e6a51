import { createPhoenixLibp2p, type OverlayNodeOptions } from '../src/index.ts'

export type TestNode = Awaited<ReturnType<typeof createPhoenixLibp2p>>

/** Real nodes on loopback, each on a port the system picks; stopped together by `stopAll`. */
export class TestNodes {
  private readonly started: TestNode[] = []

  async start(options: Partial<OverlayNodeOptions> = {}): Promise<TestNode> {
    const node = await createPhoenixLibp2p({ listen: ['/ip4/127.0.0.1/tcp/0'], ...options })
    this.started.push(node)
    return node
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.started.splice(0).map((n) => n.libp2p.stop()))
  }
}

/** The address others dial to reach `node` (as a hub). */
export const addressOf = (node: TestNode): string => node.libp2p.getMultiaddrs()[0]!.toString()

export const text = (s: string): Uint8Array => new TextEncoder().encode(s)

export async function waitUntil(what: string, condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, 10))
  }
}
