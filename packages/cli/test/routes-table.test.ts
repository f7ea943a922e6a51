import { describe, expect, it } from 'vitest'
import { routesTable } from '../src/commands/inspect.ts'

describe('phoenix routes: the next hop column', () => {
  it('shows fwd, "+N" for the other next hops of a route with several (gateways), direct, and - when unreachable', () => {
    const row = (destination: string, fwd: string | undefined, alternates: string[], reachable = true) => ({ destination, ...(fwd === undefined ? {} : { fwd }), alternates, nhops: reachable ? 2 : Number.POSITIVE_INFINITY, seq: 0, reachable, names: [destination] })
    const table = routesTable([row('far', 'gw0', ['gw0', 'gw1']), row('near', 'near', ['near']), row('one', 'gw0', ['gw0']), row('gone', undefined, [], false)])
    expect(table).toMatch(/^far +far +gw0 \+1 +2 +0$/m)
    expect(table).toMatch(/^near +near +direct +2 +0$/m)
    expect(table).toMatch(/^one +one +gw0 +2 +0$/m)
    expect(table).toMatch(/^gone +gone +- +∞ +0$/m)
  })
})
