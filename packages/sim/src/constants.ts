/**
 * Every table, queue and buffer of the simulator is bounded; each limit says why it is what it is.
 * A run that would exceed one stops with a SimulationError naming the limit, never silently.
 */

/** Nodes in one scenario. 10,000 is the largest size we study; twice that leaves headroom while
 *  keeping a typo (`1e7`) from allocating gigabytes of cores. */
export const NODES_MAX = 20_000

/** Subnets in one scenario. Addresses are 10.<subnet>.x.y, so the second octet bounds it. */
export const SUBNETS_MAX = 250

/** Scheduled scenario events (joins, crashes, ...). They are data written by hand or by a script. */
export const SCENARIO_EVENTS_MAX = 10_000

/**
 * Pending events in the event queue. A one-subnet run has every node's hello to every other in
 * flight at once: N(N−1) messages (998,470 events in the queue at 1,000 processes), ~100 M at
 * 10,000, which the former 40 M would have stopped. The queue's own cost is ~28 bytes an event
 * in a slot of its own (time and number 16, tag 4, reference 8; heap.ts), 12 in a run of
 * same-time pushes (tag and reference: a burst's sends), 3.4 GB at this limit at most; the heap's
 * reference column stays under V8's largest array (2^27 − 3 elements).
 */
export const EVENT_QUEUE_MAX = 120_000_000

/**
 * Events processed in one run. Bounds a run that never settles (say, a routing bug that keeps
 * messages circulating) so it fails with a clear error instead of running forever.
 */
export const EVENTS_PER_RUN_MAX = 2_000_000_000

/**
 * Messages refused by a full core inbox and held on one link direction. The core's inbox takes
 * thousands of messages; a link holds at most what its sender produced in the meantime, one
 * merged message per send round, so a few thousand means something is wrong.
 */
export const HELD_MESSAGES_PER_LINK_MAX = 10_000

/** Dials one master-strategy process keeps in flight: the core's default dialsInFlightMax, so the
 *  baseline and our core open sockets at the same rate. */
export const MASTER_DIALS_IN_FLIGHT_MAX = 64

/** A master-strategy process whose dial to the master was refused (the master had not started
 *  yet, startSpreadMs) dials it again this long after. Shorter than the core's first back-off
 *  (dialBackoffInitialMs, 1 s): the baseline is given the benefit of the doubt. */
export const MASTER_REDIAL_AFTER_MS = 100
/** ... at most this many times (100 s of virtual time): a master that never comes up is an error, not a loop. */
export const MASTER_REDIALS_MAX = 1_000

/**
 * Node pairs examined per reachability sample (Figures 5-6). All pairs up to this, a fixed seeded
 * sample beyond: sampling is O(pairs x hops), and at 2,000 nodes all 4 M pairs every sample
 * would cost more than the simulation itself.
 */
export const SAMPLE_PAIRS_DEFAULT = 20_000
export const SAMPLE_PAIRS_MAX = 1_000_000

/** Samples kept per run: the time series is written to CSV; beyond this the run stops sampling
 *  (and says so in the result) rather than grow without bound. */
export const SAMPLES_MAX = 100_000

/** Route-check failures reported in the result: the first hundred show the pattern. */
export const CHECK_FAILURES_MAX = 100

/** Hops followed when walking a route for a sample: the core's default hopLimit. */
export const SAMPLE_HOPS_MAX = 16

/** Below this many nodes the final check runs core's reference `checkRoutesAgainstBfs` (O(N·E));
 *  above, the equivalent twin-class checker (tested against the reference). */
export const REFERENCE_CHECK_NODES_MAX = 300

/** The twin-class checker keeps one BFS distance row per class when rows × nodes is at most this
 *  (2^25 numbers, 128 MiB: a clique of 10,000 is one row; the paper's subnets a few); past it,
 *  one row at a time. */
export const CHECK_DISTANCE_CELLS_MAX = 2 ** 25

/** How often the run checks whether it is over: fine enough that the end is found within 0.1 s of
 *  virtual time; each check is O(nodes). */
export const QUIET_CHECK_EVERY_MS = 100

/** Once the connection graph is complete, this long without routing activity (beyond any send
 *  hold) means every table is final: nothing is in flight and no core has anything left to send. */
export const QUIET_COMPLETE_MS = 100

/**
 * Node ids one run's shared numbering may hold (`SharedNumbering`): every node of the scenario
 * plus ids only named in trans sets. 4 M is far above NODES_MAX; the numbering grows with use, so
 * the bound costs nothing until reached.
 */
export const SHARED_NUMBERING_NODES_MAX = 1 << 22

/**
 * Events between two progress callbacks: often enough for a live progress line at 2,000+ nodes
 * (at 20,000, lines the CLI meant 5 s apart came 40 s apart on a run of many gateways, whose
 * events are heavy) and for a run to notice soon that its command is gone (`phoenix sim`'s heap
 * re-run), rare enough to cost nothing (a callback reads the last sample).
 */
export const PROGRESS_EVERY_EVENTS = 2_000

/**
 * Salts of the PRNG streams forked from the scenario's seed, one per use, so that adding draws in
 * one place never shifts another: the order of nodes for fraction/count selections, the start
 * times, the sampled pairs. Arbitrary but fixed: changing one changes every result file.
 */
export const PRNG_SALTS = { selectionOrder: 0x5e1ec7, startTimes: 0x57a27, samplePairs: 0x9a125 } as const

/** Bytes of a modelled record signature: Ed25519's, so updates are as large on the modelled links as on real ones. */
export const MODELLED_SIGNATURE_BYTES = 64

/**
 * Heap a simulation needs per (process, destination) pair, bytes, with V8's headroom: the live set
 * at the end of a 2,000-process run is ~400 (three subnets) to ~590 (one subnet) bytes per pair,
 * and V8 wants ~1.5× its live set. `phoenix sim` warns when N² of these pass V8's heap limit;
 * `simulations/scale.ts` picks each run's heap limit from it.
 */
export const HEAP_BYTES_PER_PAIR = 900
