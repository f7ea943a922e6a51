import type { PhysicalAddress } from './types.ts'

const NO_ADDRESSES: readonly PhysicalAddress[] = Object.freeze([])
/** A row's version: 0 = no addresses (a blank row), 1 to VERSIONS_MAX = that version of its node's lists, VERSION_OTHER = in `others`. */
const VERSION_NONE = 0
const VERSIONS_MAX = 254
const VERSION_OTHER = 255

/** Whether two address lists hold the same addresses in the same order. */
function sameList(a: readonly PhysicalAddress[], b: readonly PhysicalAddress[]): boolean {
  if (a === b) return true
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/**
 * The distinct address lists each node's records carried, as the cores of one simulator saw them
 * (`SharedNumbering`, by node index): at most VERSIONS_MAX per node, then rows keep the list
 * itself. A node's records carry a new list only when its addresses change (a restart on a new
 * port), so this holds a few lists per node, shared by every core.
 */
export class AddressVersions {
  private readonly byIndex: (readonly PhysicalAddress[])[][] = []

  /** The version (1-based) of `list` among node `index`'s lists, added if new; VERSION_OTHER past VERSIONS_MAX. */
  versionOf(index: number, list: readonly PhysicalAddress[]): number {
    const lists = (this.byIndex[index] ??= [])
    for (let i = 0; i < lists.length; i++) if (sameList(lists[i]!, list)) return i + 1
    if (lists.length >= VERSIONS_MAX) return VERSION_OTHER
    lists.push(list)
    return lists.length
  }

  at(index: number, version: number): readonly PhysicalAddress[] {
    return this.byIndex[index]![version - 1]!
  }
}

/**
 * The routing table's column of the records' addresses (`RouteEntry.addresses`). On its own
 * numbering (a real node) a reference per row, the list as it arrived. On a simulator's shared
 * numbering a 1-byte version per row of `AddressVersions`, where a reference was 8 bytes a (node,
 * destination) pair: a row then reads back a list of the same addresses, the one its node's
 * first record with them carried (addresses are compared, never changed in place).
 */
export class RecordAddresses {
  private references: (readonly PhysicalAddress[])[] = []
  private versions = new Uint8Array(0)
  /** Rows whose node had more than VERSIONS_MAX lists: at most one per row. */
  private readonly others = new Map<number, readonly PhysicalAddress[]>()

  /** `shared`: the shared numbering's lists (rows are its node indices); undefined on a numbering of its own. */
  constructor(private readonly shared: AddressVersions | undefined) {}

  of(row: number): readonly PhysicalAddress[] {
    if (this.shared === undefined) return this.references[row] ?? NO_ADDRESSES
    const version = this.versions[row]!
    if (version === VERSION_NONE) return NO_ADDRESSES
    return version === VERSION_OTHER ? this.others.get(row)! : this.shared.at(row, version)
  }

  set(row: number, list: readonly PhysicalAddress[]): void {
    if (this.shared === undefined) {
      this.references[row] = list
      return
    }
    this.others.delete(row)
    const version = list.length === 0 ? VERSION_NONE : this.shared.versionOf(row, list)
    if (version === VERSION_OTHER) this.others.set(row, list)
    this.versions[row] = version
  }

  /** Room for `capacity` rows (new rows have no addresses). */
  grow(capacity: number): void {
    if (this.shared === undefined) {
      // In one allocation, written within its length (see RouteColumns.grow).
      const next = new Array<readonly PhysicalAddress[]>(capacity)
      for (let row = 0; row < this.references.length; row++) next[row] = this.references[row]!
      this.references = next
      return
    }
    const next = new Uint8Array(capacity)
    next.set(this.versions)
    this.versions = next
  }

  /** Rows the column has room for (tests). */
  get capacity(): number {
    return this.shared === undefined ? this.references.length : this.versions.length
  }

  /** Rows kept as the list itself (tests). */
  get listsKept(): number {
    return this.others.size
  }
}
