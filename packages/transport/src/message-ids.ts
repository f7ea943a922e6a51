import { createCipheriv, randomBytes, type Cipheriv } from 'node:crypto'

/** Ids made at a time: four AES calls of this many blocks each (one per Feistel round) make them. */
const IDS_PER_BATCH = 1_024
const ROUNDS = 4
const BLOCK_BYTES = 16

/**
 * Message ids no one can guess from the ones they saw: a secret permutation of a counter over the
 * wire's uint32 (never 0). An id was the previous one + 1, so a member that received one message
 * of ours knew the ids of our next ones: it could inject a message under our source and id (the
 * receiver then took our real one for a repeat, acknowledged it and dropped it), or acknowledge a
 * message of ours to a stopped node before it arrived (found by an adversarial audit). A
 * permutation, not random draws: a counter's images never repeat within 2^32 ids, so a receiver's
 * duplicate window never mistakes two of our messages for one (random 32-bit draws would, about
 * once in 65,000 messages at the default window).
 *
 * The permutation is a 4-round Feistel network on two 16-bit halves whose round function is
 * AES-128 under a key drawn at start (Luby–Rackoff: a pseudorandom permutation from a
 * pseudorandom function); the rounds of a batch of ids are one AES call each.
 */
export class MessageIds {
  private readonly cipher: Cipheriv
  private counter = 0
  private readonly batch = new Uint32Array(IDS_PER_BATCH)
  private taken = IDS_PER_BATCH
  private readonly input = Buffer.alloc(IDS_PER_BATCH * BLOCK_BYTES)
  /** Counter values used so far (a plain number: it does not wrap where the counter does). */
  private used = 0

  constructor(key: Uint8Array = randomBytes(16)) {
    this.cipher = createCipheriv('aes-128-ecb', key, null).setAutoPadding(false)
  }

  /** The next id: never 0, and none repeats before 2^32 − 1 ids have been handed out. */
  next(): number {
    for (;;) {
      if (this.taken === IDS_PER_BATCH) this.refill()
      const id = this.batch[this.taken++]!
      this.used++
      if (id !== 0) return id
    }
  }

  /**
   * Whether `id` is one this instance handed out: the permutation run backwards gives the counter
   * value it came from, which must be one already used. What a notice about "our" message is
   * checked against: a forged one for an id we never sent is refused, unless the forger guessed
   * one of the `used` of 2^32 ids.
   */
  issued(id: number): boolean {
    if (!Number.isInteger(id) || id < 1 || id >= 2 ** 32) return false
    if (this.used >= 2 ** 32) return true
    let left = id >>> 16
    let right = id & 0xffff
    const block = Buffer.alloc(BLOCK_BYTES)
    for (let round = ROUNDS - 1; round >= 0; round--) {
      // A round took (L, R) to (R, L ^ F(round, R)); so R = L', and L = R' ^ F(round, L').
      block[0] = round
      block.writeUInt16BE(left, 1)
      const before = right ^ this.cipher.update(block).readUInt16BE(0)
      right = left
      left = before
    }
    return ((left << 16) | right) >>> 0 < this.used
  }

  private refill(): void {
    const left = new Uint16Array(IDS_PER_BATCH)
    const right = new Uint16Array(IDS_PER_BATCH)
    for (let i = 0; i < IDS_PER_BATCH; i++) {
      const value = (this.counter + i) >>> 0
      left[i] = value >>> 16
      right[i] = value & 0xffff
    }
    this.counter = (this.counter + IDS_PER_BATCH) >>> 0
    for (let round = 0; round < ROUNDS; round++) {
      // Block i: (round, right half); its first two output bytes are the round function's value.
      this.input.fill(0)
      for (let i = 0; i < IDS_PER_BATCH; i++) {
        this.input[i * BLOCK_BYTES] = round
        this.input.writeUInt16BE(right[i]!, i * BLOCK_BYTES + 1)
      }
      const out = this.cipher.update(this.input)
      for (let i = 0; i < IDS_PER_BATCH; i++) {
        const mixed = left[i]! ^ out.readUInt16BE(i * BLOCK_BYTES)
        left[i] = right[i]!
        right[i] = mixed
      }
    }
    for (let i = 0; i < IDS_PER_BATCH; i++) this.batch[i] = ((left[i]! << 16) | right[i]!) >>> 0
    this.taken = 0
  }
}
