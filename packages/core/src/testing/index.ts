/**
 * `@phoenix-overlay/core/testing`: the one seeded harness shared by the property tests, the
 * benches, the demos and the simulator. Pure like the core (no I/O, no clock, no random source).
 */
export { Prng, prng } from './prng.ts'
export { TestNet, addressOf, randomConnectedGraph, type NetOptions } from './net.ts'
export { subnetLayout, type SubnetLayout } from './subnets.ts'
