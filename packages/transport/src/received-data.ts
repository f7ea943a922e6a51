import { decodeDataHeader, type DataFrame, type DataHeader } from '@phoenix-overlay/wire'
import type { Uint8ArrayList } from 'uint8arraylist'
import { firstPiece, type FrameBytes } from './link.ts'

/**
 * A data frame's header decoded from its first piece (`decodeDataHeader`), its payload left where
 * it is: for a frame in one piece, a view made only if something reads it (delivery here, or a
 * re-encoding), never when the frame is passed on as it came; for a frame in several pieces,
 * joined (copied) only if something reads it. Undefined if it is not a data frame or its header
 * is not all in the first piece (then the frame is joined and decoded whole).
 */
export function receivedData(received: FrameBytes): DataFrame | undefined {
  const first = firstPiece(received)
  if (first === undefined) return undefined
  const decoded = decodeDataHeader(first, received.byteLength)
  if (decoded === undefined) return undefined
  if (received instanceof Uint8Array) return new OnePieceData(decoded.header, decoded.hopLimitAt, received, decoded.payloadStart)
  return new PiecesData(decoded.header, decoded.hopLimitAt, received, decoded.payloadStart)
}

/**
 * A data frame's fields but the payload, copied from its header. A class, not an object literal
 * with a getter: V8 builds one of those in its slow dictionary mode, measured at 72 ms of a
 * relay's 3.5 s of CPU for 128 MiB of 64 KiB messages.
 */
export abstract class ReceivedData implements DataFrame {
  readonly source: string
  readonly destination: string
  readonly name: string
  readonly hopLimit: number
  readonly messageId: number
  readonly ackRequested: boolean
  readonly initialHopLimit: number | undefined

  constructor(
    header: DataHeader,
    /** Where the hop limit's varint starts in the frame's first piece (`decodeDataHeader`), or -1: a relay rewrites it there. */
    readonly hopLimitAt: number,
  ) {
    this.source = header.source
    this.destination = header.destination
    this.name = header.name
    this.hopLimit = header.hopLimit
    this.messageId = header.messageId
    this.ackRequested = header.ackRequested
    this.initialHopLimit = header.initialHopLimit
  }

  abstract get payload(): Uint8Array
}

/** A data frame that arrived in one piece: the payload a view of it, made when first read. */
class OnePieceData extends ReceivedData {
  private view: Uint8Array | undefined

  constructor(header: DataHeader, hopLimitAt: number, private readonly frame: Uint8Array, private readonly payloadStart: number) {
    super(header, hopLimitAt)
  }

  get payload(): Uint8Array {
    this.view ??= this.frame.subarray(this.payloadStart)
    return this.view
  }
}

/** A data frame that arrived in pieces: the payload is joined (copied) out of them only if something reads it. */
export class PiecesData extends ReceivedData {
  private joined: Uint8Array | undefined

  constructor(header: DataHeader, hopLimitAt: number, private readonly pieces: Uint8ArrayList, private readonly payloadStart: number) {
    super(header, hopLimitAt)
  }

  get payload(): Uint8Array {
    this.joined ??= this.pieces.subarray(this.payloadStart)
    return this.joined
  }

  /** The payload as the pieces it arrived in (views, nothing copied). */
  get payloadPieces(): Uint8ArrayList {
    return this.pieces.sublist(this.payloadStart)
  }
}
