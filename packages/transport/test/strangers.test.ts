import { describe, expect, it } from 'vitest'
import { runStrangers } from '../bench/strangers.ts'
import { STRANGER_LIMITS } from '../src/index.ts'

const MiB = 1024 * 1024
const base = 24000 + (process.pid % 500) * 4 // below the ephemeral port range (32768-), apart from the other tests

// Strangers cost little (issue 14): a real node process in a private network, plain TCP clients
// that never complete a handshake. The same run as `packages/transport/bench/strangers.ts`.
describe('strangers: unauthenticated connections', () => {
  it('200 garbage connections of 1 MiB, 20 at a time, leave the RSS within 64 MB; silent ones are bounded in number and time', async () => {
    const r = await runStrangers({ connections: 200, parallel: 20, bytes: MiB, settleMs: 5_000, silent: 300, basePort: base })
    console.log(`strangers: RSS before ${(r.rss.before / MiB).toFixed(0)} MiB, during (max) ${(r.rss.duringMax / MiB).toFixed(0)} MiB, after ${(r.rss.after / MiB).toFixed(0)} MiB; silent: ${JSON.stringify(r.silent)}`)
    expect(r.rss.after - r.rss.before).toBeLessThan(64 * MiB)
    expect(r.rss.duringMax - r.rss.before).toBeLessThan(64 * MiB)
    // Handshakes in progress at once are bounded: the rest are refused at once, not held.
    // Every one reached the node (connected, or reset by it before this process saw it connected).
    expect(r.silent.opened + r.silent.resetBeforeOpen).toBe(300)
    expect(r.silent.otherErrors).toBe(0)
    expect(r.silent.heldAfter3s).toBeLessThanOrEqual(STRANGER_LIMITS.handshakesInProgressMax)
    // And each for at most strangerSilenceMs (libp2p's default held them 10 s; an honest handshake may take strangerHandshakeTimeoutMs).
    expect(r.silent.lastClosedAfterMs).toBeLessThan(STRANGER_LIMITS.strangerSilenceMs + 3_000)
    // The node still serves members.
    expect(r.stillRouting).toBe(true)
  }, 180_000)
})
