import type { NodeId, PhysicalAddress } from './types.ts'

/**
 * Signing and checking origin records, injected by the driver (the transport signs with the
 * node's libp2p key; tests with node:crypto). The core stays pure: it only builds the bytes to
 * sign and decides when to ask.
 */
export interface RecordAuthority {
  /** Signs this node's own record. */
  sign(payload: Uint8Array): Uint8Array
  /** True if `signature` over `payload` was made by `node`'s key (its id names the key). */
  verify(node: NodeId, payload: Uint8Array, signature: Uint8Array): boolean
}

const encoder = new TextEncoder()

/**
 * The bytes an origin record signs: what only the destination may say about itself — its id,
 * an even sequence number, its logical names and its physical addresses — in one canonical,
 * length-prefixed form (so no two records share a payload), under a domain tag.
 */
export function recordPayload(node: NodeId, evenSeq: number, names: readonly string[], addresses: readonly PhysicalAddress[]): Uint8Array {
  const parts: Uint8Array[] = [encoder.encode('phoenix-origin-record/1'), encoder.encode(node)]
  for (const list of [names, addresses]) {
    parts.push(u32(list.length))
    for (const item of list) parts.push(encoder.encode(item))
  }
  let length = 4
  for (const part of parts) length += 4 + part.length
  const out = new Uint8Array(length)
  const view = new DataView(out.buffer)
  view.setUint32(0, evenSeq)
  let at = 4
  for (const part of parts) {
    view.setUint32(at, part.length)
    out.set(part, at + 4)
    at += 4 + part.length
  }
  return out
}

function u32(n: number): Uint8Array {
  const bytes = new Uint8Array(4)
  new DataView(bytes.buffer).setUint32(0, n)
  return bytes
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}
