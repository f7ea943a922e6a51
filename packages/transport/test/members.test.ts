import { describe, expect, it } from 'vitest'
import { runFlood } from '../bench/flood.ts'

const MiB = 1024 * 1024
const base = 20000 + (process.pid % 500) * 8 // below the ephemeral port range (32768-), apart from the other tests

// Members (issue 14), with real processes: the same run as `packages/transport/bench/flood.ts`.
describe('a member floods fake destinations through a hub, within the limits', () => {
  it('A, B and H keep their links, the surplus is refused, and idle A forgets the flood after the retention time', async () => {
    const retentionMs = 10_000
    // The bench's flood (32,767 under the default limit of 32,768) at an eighth of the size: the
    // same limits relative to each other, a few seconds of verifying instead of a minute.
    const limit = 4_096
    const fakes = limit - 1
    const r = await runFlood({ fakes, perUpdate: 1_024, intervalMs: 150, retentionMs, basePort: base, destinationsPerNeighbourMax: limit })
    console.log(`flood: ${JSON.stringify({ ...r, ids: undefined })}`)
    const name = (id: string) => Object.entries(r.ids).find(([, v]) => v === id)?.[0]
    // Nobody dropped the hub (the previous code had A and B drop H: it "introduced" 32,770 destinations).
    expect(r.linksAfterFlood.H.map(name).sort()).toEqual(['A', 'B', 'M'])
    expect(r.linksAfterFlood.A.map(name)).toEqual(['H'])
    expect(r.linksAfterFlood.B.map(name)).toEqual(['H'])
    for (const n of ['H', 'A', 'B'] as const) expect(r.afterFlood[n].peersDropped).toBe(0)
    expect(r.stillRouting).toBe(true)
    // M stayed within H's share, so H holds the flood; what passed H's share with A and B was refused there.
    expect(r.afterFlood.H.destinations).toBe(fakes + 3)
    expect(r.afterFlood.A.introductionsRefused).toBeGreaterThan(0)
    expect(r.afterFlood.B.introductionsRefused).toBeGreaterThan(0)
    // Expiry on a timer: idle A forgets the dead flood after the retention time, and its live heap returns.
    expect(r.destinationsA.afterExpiry).toBe(r.destinationsA.beforeFlood)
    expect(r.expiredAfterMs).toBeLessThan(retentionMs + 30_000)
    expect(r.liveHeapA.afterExpiry - r.liveHeapA.beforeFlood).toBeLessThan(8 * MiB)
  }, 400_000)
})
