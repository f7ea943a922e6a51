import { describe, expect, it } from 'vitest'
import { NO_PEERS_LINE, NO_ROUTES_LINE, peersTable, routesTable } from '../src/commands/inspect.ts'

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

describe('phoenix routes and phoenix peers of a node alone', () => {
  it('say so in one line and how nodes connect, instead of the header alone', () => {
    expect(routesTable([])).toBe(NO_ROUTES_LINE)
    expect(peersTable([], [])).toBe(NO_PEERS_LINE)
    expect(NO_ROUTES_LINE).toMatch(/^no routes: this node knows no other node yet \(.*--hub.*\)\n$/)
    expect(NO_PEERS_LINE).toMatch(/^no neighbours: this node is connected to no other node \(.*--hub.*\)\n$/)
    // With one, the table as before.
    expect(peersTable(['12D3KooWpeer'], [])).toBe('PEER          NAMES\n12D3KooWpeer  -\n')
  })
})
