import type { RouteAdvert, UpdateMessage } from '@phoenix-overlay/core'
import { WIRE_LIMITS } from './constants.ts'
import { WireError, encodeFrame } from './codec.ts'
import { utf8Bytes } from './utf8.ts'

// Protobuf sizes by arithmetic, matching what protons writes (proto3: default-valued singular
// fields are omitted; every field number here is below 16, so each tag is one byte). The
// simulator counts bytes for millions of entries, so no frame is built to measure one.

const varintBytes = (n: number): number => (n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5)

const lengthDelimited = (length: number): number => 1 + varintBytes(length) + length
const stringField = (s: string): number => lengthDelimited(utf8Bytes(s))

/**
 * An advert's size, computed each time it is counted. (A WeakMap of sizes by advert crashed the
 * 5,000-process simulation: every advert of every message in flight was a key, the table passed
 * V8's largest hash table, "invalid table size", after mark-compacts of 8 s each spent on it.)
 * The names and addresses are measured directly: a record has a few (at most namesPerNodeMax
 * and addressesPerNodeMax).
 */
function advertBytes(a: RouteAdvert): number {
  let size = 0
  if (a.destination !== '') size += stringField(a.destination)
  if (a.seq !== 0) size += 1 + varintBytes(a.seq)
  if (a.nhops !== 0) size += 1 + varintBytes(a.nhops)
  for (let i = 0; i < a.names.length; i++) size += stringField(a.names[i]!)
  for (let i = 0; i < a.addresses.length; i++) size += stringField(a.addresses[i]!)
  if (a.trans + 1 !== 0) size += 1 + varintBytes(a.trans + 1)
  if (a.signature !== undefined && a.signature.length > 0) size += lengthDelimited(a.signature.length)
  return size
}

function updateBytes(u: UpdateMessage): number {
  let size = 0
  size += idListBytes(u.neighbourSlots)
  for (const set of u.transSets) size += lengthDelimited(set.length)
  for (const entry of u.entries) size += lengthDelimited(advertBytes(entry))
  if (u.hello !== undefined) size += helloFieldBytes(u.hello)
  size += lostFieldBytes(u)
  if (u.planEnd === true) size += PLAN_END_BYTES
  if (u.allServed === true) size += ALL_SERVED_BYTES
  return size
}

/**
 * A sender shares one slot table among its updates until its neighbours change, and one list of
 * lost neighbours among the updates of a round, and sizes a round's updates one after another: the
 * sizes of the last few lists are kept, so each is measured about once (a gateway's table names
 * every node that joined through it: 1,000 strings per update at 1,000 processes). A few, by
 * identity, not a map keyed by every list (a clique of 5,000 makes millions of them, and that run
 * died inside a WeakMap insert: simulations/ANALYSIS.md, "The fifth wall"); the ring holds at most
 * this many lists.
 */
const RECENT_ID_LISTS = 8
const recentLists: (readonly string[] | undefined)[] = new Array<undefined>(RECENT_ID_LISTS).fill(undefined)
const recentSizes = new Float64Array(RECENT_ID_LISTS)
let recentNext = 0

function idListBytes(ids: readonly string[]): number {
  if (ids.length === 0) return 0
  for (let i = 0; i < RECENT_ID_LISTS; i++) if (recentLists[i] === ids) return recentSizes[i]!
  let size = 0
  for (let i = 0; i < ids.length; i++) size += stringField(ids[i]!)
  // Only a list that cannot change may be remembered by identity.
  if (Object.isFrozen(ids)) {
    recentLists[recentNext] = ids
    recentSizes[recentNext] = size
    recentNext = (recentNext + 1) % RECENT_ID_LISTS
  }
  return size
}

/** `plan_end = true`: a one-byte tag and a one-byte varint. */
const PLAN_END_BYTES = 2
/** `all_served = true`: a one-byte tag and a one-byte varint. */
const ALL_SERVED_BYTES = 2
const lostFieldBytes = (u: UpdateMessage): number => (u.lostNeighbours === undefined ? 0 : idListBytes(u.lostNeighbours))

const helloFieldBytes = (hello: NonNullable<UpdateMessage['hello']>): number => lengthDelimited(hello.receiverSeq === undefined ? 0 : 1 + varintBytes(hello.receiverSeq))

/** Exactly `encodeFrame({ kind: 'update', update }).length`, computed without encoding. */
export function encodedUpdateSize(update: UpdateMessage): number {
  return lengthDelimited(updateBytes(update))
}

/**
 * Splits an update whose frame would exceed `frameBytesMax` into updates that each fit. Each
 * part keeps the neighbour table and only the trans sets its entries use, re-indexed.
 */
export function splitUpdate(update: UpdateMessage, frameBytesMax: number = WIRE_LIMITS.frameBytesMax): UpdateMessage[] {
  if (encodedUpdateSize(update) <= frameBytesMax) return [update]
  // Every part is measured as if it carried the plan's end, which only the last one does.
  const base = idListBytes(update.neighbourSlots) + (update.planEnd === true ? PLAN_END_BYTES : 0) + (update.allServed === true ? ALL_SERVED_BYTES : 0)
  // The hello and the lost neighbours ride on the first part only (each is said once).
  const helloBytes = (update.hello === undefined ? 0 : helloFieldBytes(update.hello)) + lostFieldBytes(update)
  const parts: UpdateMessage[] = []
  let entries: RouteAdvert[] = []
  let sets: Uint8Array[] = []
  let indexOf = new Map<number, number>()
  let size = base + helloBytes
  const flush = () => {
    if (entries.length > 0) {
      const first = parts.length === 0
      parts.push({
        neighbourSlots: update.neighbourSlots,
        transSets: sets,
        entries,
        // What it says holds of every entry, so every part says it (each carries the slot table).
        ...(update.allServed === true ? { allServed: true as const } : {}),
        ...(first && update.hello !== undefined ? { hello: update.hello } : {}),
        ...(first && update.lostNeighbours !== undefined ? { lostNeighbours: update.lostNeighbours } : {}),
      })
    }
    entries = []
    sets = []
    indexOf = new Map()
    size = base
  }
  for (const entry of update.entries) {
    const set = entry.trans >= 0 ? update.transSets[entry.trans]! : undefined
    const newSet = set !== undefined && !indexOf.has(entry.trans) ? lengthDelimited(set.length) : 0
    const cost = lengthDelimited(advertBytes(entry)) + newSet
    if (lengthDelimited(base + helloBytes + cost) > frameBytesMax) {
      throw new WireError('FRAME_TOO_LARGE', `the entry for ${entry.destination} alone does not fit in ${frameBytesMax} bytes`)
    }
    if (lengthDelimited(size + cost) > frameBytesMax) flush()
    let trans = -1
    if (set !== undefined) {
      let index = indexOf.get(entry.trans)
      if (index === undefined) {
        index = sets.length
        sets.push(set)
        indexOf.set(entry.trans, index)
        size += lengthDelimited(set.length)
      }
      trans = index
    }
    const moved = trans === entry.trans ? entry : { ...entry, trans }
    entries.push(moved)
    size += lengthDelimited(advertBytes(moved))
  }
  flush()
  // No entries: the hello or the lost neighbours alone, as they are.
  if (parts.length === 0) return [update]
  // The plan's end rides on the last part (what it says holds once every part is out).
  if (update.planEnd === true) parts[parts.length - 1] = { ...parts[parts.length - 1]!, planEnd: true }
  return parts
}

/** Encodes an update as one frame or, if it is too large, several. */
export function encodeUpdateFrames(update: UpdateMessage, frameBytesMax: number = WIRE_LIMITS.frameBytesMax): Uint8Array[] {
  return splitUpdate(update, frameBytesMax).map((part) => encodeFrame({ kind: 'update', update: part }, frameBytesMax))
}
