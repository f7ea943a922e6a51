import { generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto'
import { recordPayload, type RecordAuthority, type RouteAdvert } from '../src/index.ts'

/** Ed25519 keys per node id; a node's id names its public key, as a libp2p peer id does. */
export class KeyRing {
  private readonly keys = new Map<string, { publicKey: KeyObject; privateKey: KeyObject }>()
  private key(id: string) {
    let pair = this.keys.get(id)
    if (pair === undefined) this.keys.set(id, (pair = generateKeyPairSync('ed25519')))
    return pair
  }
  /** Signs as `id` (whose key exists from now on) and verifies against the keys made so far. */
  authority(id: string): RecordAuthority {
    this.key(id)
    return {
      sign: (payload) => new Uint8Array(sign(null, payload, this.key(id).privateKey)),
      verify: (node, payload, signature) => this.keys.has(node) && verify(null, payload, this.key(node).publicKey, signature),
    }
  }
  /** `id`'s signature over its record at `seq` (an odd seq is signed as the even one it retracts). */
  signRecord(id: string, seq: number, names: string[] = [], addresses: string[] = []): Uint8Array {
    return this.authority(id).sign(recordPayload(id, seq - (seq % 2), names, addresses))
  }
  /** A validly signed record of `id` as its owner advertises it (0 hops). */
  record(id: string, seq: number, names: string[] = [], nhops = 0): RouteAdvert {
    const signature = this.authority(id).sign(recordPayload(id, seq, names, []))
    return { destination: id, seq, nhops, names, addresses: [], trans: -1, signature }
  }
}
