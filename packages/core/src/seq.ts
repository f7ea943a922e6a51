/**
 * Destination sequence numbers, as in DSDV: the destination itself only ever issues even
 * numbers; a node that loses its route issues seq + 1 (odd), meaning "unreachable". They are
 * unsigned 32-bit and compared with serial-number arithmetic (RFC 1982), so a long-lived node
 * can wrap around without its fresh routes looking stale.
 */
export const SEQ_MODULUS = 2 ** 32
const HALF = 2 ** 31

export function isValidSeq(seq: number): boolean {
  return Number.isInteger(seq) && seq >= 0 && seq < SEQ_MODULUS
}

/** True if `a` is newer than `b`. */
export function seqNewer(a: number, b: number): boolean {
  const diff = (a - b + SEQ_MODULUS) % SEQ_MODULUS
  return diff !== 0 && diff < HALF
}

export function seqAdd(seq: number, n: number): number {
  return (seq + n) % SEQ_MODULUS
}

export function isUnreachableSeq(seq: number): boolean {
  return seq % 2 === 1
}

/** The next even number strictly newer than `seq`: what a destination issues to refresh its route. */
export function nextOwnSeq(seq: number): number {
  return seq % 2 === 0 ? seqAdd(seq, 2) : seqAdd(seq, 1)
}
