import type { UpdateMessage } from './types.ts'

/**
 * Receiver seqs below this share one frozen hello and one frozen hello-only message each (a
 * record's seq grows by two per change, so a run's seqs stay far below it); at or past it, a
 * fresh object per message. Bounds the shared objects to HELLO_SHARED_SEQ_MAX + 1 of each.
 */
export const HELLO_SHARED_SEQ_MAX = 1_024

type Hello = NonNullable<UpdateMessage['hello']>

const NONE: readonly never[] = Object.freeze([])
/** Slot 0: receiverSeq undefined; slot s + 1: receiverSeq s. Filled on first use. */
const hellos: (Hello | undefined)[] = []
const helloOnly: (UpdateMessage | undefined)[] = []

function slotOf(receiverSeq: number | undefined): number {
  if (receiverSeq === undefined) return 0
  return Number.isInteger(receiverSeq) && receiverSeq >= 0 && receiverSeq < HELLO_SHARED_SEQ_MAX ? receiverSeq + 1 : -1
}

/** The hello naming `receiverSeq`: one frozen object per value (below HELLO_SHARED_SEQ_MAX), shared by every message that carries it. */
export function helloOf(receiverSeq: number | undefined): Hello {
  const slot = slotOf(receiverSeq)
  if (slot < 0) return { receiverSeq }
  return (hellos[slot] ??= Object.freeze({ receiverSeq }))
}

/**
 * A message with the hello and nothing else (no entries, trans sets, lost neighbours or plan
 * end): one frozen object per receiverSeq, shared by every sender and receiver. The content is
 * all a receiver reads and no one writes a message, so sharing changes nothing but memory: a
 * one-subnet run has every node's hello to every other in flight at once (N(N−1) messages, ~100
 * M at 10,000 processes, ~150 bytes each as objects of their own).
 */
export function helloOnlyMessage(hello: Hello): UpdateMessage {
  const slot = slotOf(hello.receiverSeq)
  if (slot < 0) return { neighbourSlots: NONE, transSets: NONE, entries: [], hello }
  return (helloOnly[slot] ??= Object.freeze({ neighbourSlots: NONE, transSets: NONE, entries: NONE, hello: helloOf(hello.receiverSeq) }))
}
