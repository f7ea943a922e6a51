import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { connectablePairs, subnetFirewallAllows, type SubnetPlacement } from '../src/index.ts'
import { subnetLayout } from '../src/testing/index.ts'

describe('the subnet firewall rule', () => {
  it('inside a subnet anyone may dial anyone; across subnets only a gateway accepts', () => {
    const a0 = { subnet: 'A', gateway: true }
    const a1 = { subnet: 'A', gateway: false }
    const b0 = { subnet: 'B', gateway: true }
    const b1 = { subnet: 'B', gateway: false }
    expect(subnetFirewallAllows(a1, a0)).toBe(true)
    expect(subnetFirewallAllows(a0, a1)).toBe(true)
    expect(subnetFirewallAllows(a1, b0)).toBe(true)
    expect(subnetFirewallAllows(b0, a1)).toBe(false)
    expect(subnetFirewallAllows(a1, b1)).toBe(false)
  })

  it('connectablePairs counts, in O(n), the pairs the rule lets connect one way or the other', () => {
    const placement = fc.record({ subnet: fc.integer({ min: 0, max: 3 }), gateway: fc.boolean() })
    fc.assert(
      fc.property(fc.array(placement, { maxLength: 40 }), (placements: SubnetPlacement[]) => {
        let brute = 0
        for (let i = 0; i < placements.length; i++) {
          for (let j = i + 1; j < placements.length; j++) {
            if (subnetFirewallAllows(placements[i]!, placements[j]!) || subnetFirewallAllows(placements[j]!, placements[i]!)) brute++
          }
        }
        expect(connectablePairs(placements)).toBe(brute)
      }),
    )
  })

  it('subnetLayout builds the demos\' layout: the first node of each subnet is its gateway and the only hub', () => {
    const layout = subnetLayout({ A: 3, B: 2 })
    expect(layout.nodes).toEqual(['A0', 'A1', 'A2', 'B0', 'B1'])
    expect(layout.gateways).toEqual(['A0', 'B0'])
    expect(layout.allowed('B1', 'A0')).toBe(true)
    expect(layout.allowed('B1', 'A1')).toBe(false)
    expect(layout.hubsOf('A1')).toEqual(['addr:A0', 'addr:B0'])
    expect(layout.hubsOf('A0')).toEqual(['addr:B0'])
  })
})
