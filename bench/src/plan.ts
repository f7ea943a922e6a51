/**
 * What a run measures: message sizes, the byte budget per throughput case, the latency probes,
 * the rounds, and the memory transfer. `--quick` is a smoke run of the same harness.
 */
import type { PathId } from './paths.ts'
import { PATH_IDS } from './paths.ts'

const KiB = 1024
const MiB = 1024 * KiB

export interface SizePlan {
  readonly messageBytes: number
  /** Bytes per throughput case. */
  readonly budgetBytes: number
  /**
   * Bytes of the same messages sent just before the measured ones, on every path alike, whose
   * figure is kept apart ("first transfer"): a fresh path runs several times slower at first
   * (V8 compiling the hot code, the heap growing to its working size). At 64 KiB, six 128 MiB
   * transfers in a row on the same processes went 55, 78, 85, 90, 96, 84 MiB/s through the
   * pause/resume relay and 44, 66, 75, 83, 80, 86 through Phoenix (one run, load 3-4).
   */
  readonly warmupBytes: number
  /** Latency probe: this many messages, one at a time, each sent `gapMs` after the previous one arrived. */
  readonly latencyMessages: number
  readonly gapMs: number
}

export interface Plan {
  readonly rounds: number
  readonly paths: readonly PathId[]
  readonly sizes: readonly SizePlan[]
  /** The in-process variant (every node in the driver's process): these sizes only. */
  readonly inProcessSizes: readonly SizePlan[]
  /** The middle node's memory over one long transfer of 64 KiB messages, per relay kind. */
  readonly memoryBytes: number
  readonly memoryPaths: readonly PathId[]
  /**
   * Fresh processes for each memory transfer (so one kind's garbage is not another's RSS). A
   * smoke run shares one set: starting a node process costs about 2 s of CPU (loading libp2p
   * through tsx), and those seconds are most of a smoke run.
   */
  readonly memoryFreshProcesses: boolean
  /** Pause before each latency probe, so the throughput run has left no work behind. */
  readonly settleMs: number
  /** Node's flags for every node process, baseline or Phoenix alike (NODE_FLAGS unless `--node-flags` says otherwise). */
  readonly nodeFlags: readonly string[]
}

/**
 * What every node process runs with, as `phoenix node` runs (packages/cli/bin/phoenix): V8's
 * old-generation limit kept at 128 MiB or more (`--initial-old-space-size=128`; without it V8
 * shrinks the limit to about twice a node's ~20 MB live heap, and a relay's middle node then did a
 * mark-compact every 100-200 ms: 6-10 per 64 MiB forwarded against 3-4, the pipe relays' as much as
 * Phoenix's; bench/REPORT.md, "The middle node's mark-compacts"), and its young generation capped
 * at 16 MiB semi-spaces. With Node's default (semi-spaces that grow up to
 * 64 MiB on this machine: 32 MiB after the 64 B and 4 KiB cases), a node whose old generation is
 * small does an incremental mark-compact every ~250 ms when large messages follow (V8 schedules
 * one once the old generation's headroom is no larger than the young generation's target
 * capacity: Heap::IncrementalMarkingLimitReached in V8's src/heap/heap.cc), where it did
 * none before (Phoenix's sender: 2-4 ms more CPU per MiB at 64 KiB). Every path gets the same
 * flags, so they favour none: the relays' throughput did not move. bench/REPORT.md, "Node's
 * young generation after small messages". `--node-flags ''` runs every node with Node's defaults.
 */
export const NODE_FLAGS: readonly string[] = ['--max-semi-space-size=16', '--initial-old-space-size=128']

// Budgets: each case takes a few seconds on a 2-core machine (64 B messages move at well under
// 1 MiB/s on every path: each is its own encrypted write).
const full: SizePlan[] = [
  { messageBytes: 64, budgetBytes: 1 * MiB, warmupBytes: 256 * KiB, latencyMessages: 300, gapMs: 1 },
  { messageBytes: 4 * KiB, budgetBytes: 32 * MiB, warmupBytes: 32 * MiB, latencyMessages: 300, gapMs: 1 },
  { messageBytes: 64 * KiB, budgetBytes: 128 * MiB, warmupBytes: 128 * MiB, latencyMessages: 200, gapMs: 1 },
  { messageBytes: MiB, budgetBytes: 128 * MiB, warmupBytes: 128 * MiB, latencyMessages: 40, gapMs: 5 },
]

const quick: SizePlan[] = [
  { messageBytes: 64, budgetBytes: 64 * KiB, warmupBytes: 16 * KiB, latencyMessages: 10, gapMs: 1 },
  { messageBytes: 4 * KiB, budgetBytes: 2 * MiB, warmupBytes: 1 * MiB, latencyMessages: 10, gapMs: 1 },
  { messageBytes: 64 * KiB, budgetBytes: 4 * MiB, warmupBytes: 2 * MiB, latencyMessages: 10, gapMs: 1 },
  { messageBytes: MiB, budgetBytes: 4 * MiB, warmupBytes: 2 * MiB, latencyMessages: 3, gapMs: 5 },
]

/** The message sizes a run can measure (`--sizes` picks among them). */
export const SIZE_BYTES: readonly number[] = full.map((s) => s.messageBytes)

const RELAY_KINDS: PathId[] = ['it-pipe', 'pause-resume', 'circuit-relay-v2', 'phoenix-1']

export function makePlan(options: { quick: boolean; rounds?: number; paths?: readonly PathId[]; sizes?: readonly number[]; nodeFlags?: readonly string[] }): Plan {
  const sizes = (options.quick ? quick : full).filter((s) => options.sizes === undefined || options.sizes.includes(s.messageBytes))
  return {
    rounds: options.rounds ?? (options.quick ? 1 : 3),
    paths: options.paths ?? PATH_IDS,
    sizes,
    inProcessSizes: sizes.filter((s) => s.messageBytes === 64 * KiB),
    memoryBytes: options.quick ? 8 * MiB : 1024 * MiB,
    memoryFreshProcesses: !options.quick,
    settleMs: options.quick ? 20 : 200,
    memoryPaths: RELAY_KINDS.filter((p) => options.paths === undefined || options.paths.includes(p)),
    nodeFlags: options.nodeFlags ?? NODE_FLAGS,
  }
}

/** `--node-flags`' value: Node options separated by spaces ('' for none); each must start with `--`. */
export function parseNodeFlags(value: string): string[] {
  const flags = value.split(' ').filter((flag) => flag !== '')
  for (const flag of flags) if (!flag.startsWith('--')) throw new Error(`--node-flags: ${JSON.stringify(flag)} is not a Node option (each starts with --), in ${JSON.stringify(value)}`)
  return flags
}

export function sizeLabel(bytes: number): string {
  if (bytes >= MiB) return `${bytes / MiB} MiB`
  if (bytes >= KiB) return `${bytes / KiB} KiB`
  return `${bytes} B`
}
