/** Bytes of a protobuf length-delimited field (tag + length varint + body). */
function lengthDelimited(bodyBytes: number): number {
  return 1 + varintBytes(bodyBytes) + bodyBytes
}

function varintBytes(value: number): number {
  let bytes = 1
  while (value >= 0x80) {
    value = Math.floor(value / 128)
    bytes++
  }
  return bytes
}

/**
 * Bytes of a master-strategy report (a list of neighbour ids) or routing table (id, next hop,
 * hops), counted as protobuf would encode it. Updates are sized by the wire codec itself
 * (`encodedUpdateSize`); the master baseline has no wire format of its own.
 */
export function estimateListBytes(items: number, idBytes: number, perItemExtra: number): number {
  return lengthDelimited(items * (lengthDelimited(idBytes) + perItemExtra))
}
