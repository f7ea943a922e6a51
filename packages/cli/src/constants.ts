/** Every limit and timing of the `phoenix` command, with its reason. */

/**
 * Largest message the control endpoint accepts for `send` (413 past it). The wire's payload limit
 * is 4 MiB; a command-line client has no business near it, and the node holds a whole body in
 * memory before sending it. Bigger payloads: embed the library (`@phoenix-overlay/transport`).
 */
export const CONTROL_BODY_BYTES_MAX = 1024 * 1024

/**
 * Received messages a `phoenix node` holds for its readers (`phoenix recv`, `--print`). When it
 * is full the node stops taking messages from the transport, whose own buffer then fills and
 * refuses further messages (their senders hear it), so unread messages never grow the process
 * without bound. 10,000 is minutes of work for a shell job that reads as fast as it is fed.
 */
export const INBOX_MESSAGES_MAX = 10_000

/**
 * Bytes of received payloads held for readers, for the same reason: 64 MiB is 64 of the largest
 * messages the control endpoint sends, or 16 of the largest the wire carries.
 */
export const INBOX_BYTES_MAX = 64 * 1024 * 1024

/**
 * How often a node checks that the launchers it was started through (npx, pnpm, npm, the `.bin`
 * shell shims) are still alive: a SIGTERM sent to the pid a user holds kills the shim, not Node,
 * so this poll is how the signal reaches the node. Reading a few /proc files 4 times a second
 * costs nothing measurable.
 */
export const LAUNCHER_POLL_MS = 250

/**
 * How long a leave (libp2p stop: goodbye to neighbours, streams closed) may take before the
 * process exits anyway, so a node whose neighbours do not answer cannot outlive its grace period.
 */
export const LEAVE_TIMEOUT_MS = 4_000

/**
 * A repeat of the signal that began the leave within this long is the same signal sent twice,
 * not a user's second Ctrl-C: GNU `timeout` signals its child and then its own process group,
 * and `kill -- -PGID` plus a shell forwarding to its child do the same. Treated as "exit at
 * once", it cut the leave short (found by a new-user audit, once in ~11 runs under `timeout`).
 * A person pressing Ctrl-C twice takes longer than this.
 */
export const SIGNAL_ECHO_MS = 500

/**
 * At a stop, how long the node keeps handing its readers (`recv`) the acknowledged messages its
 * inbox still holds, once the transport has left: a stop under load dropped up to 78 that an
 * attached `recv` loop would have taken (found by a new-user audit). Within LEAVE_TIMEOUT_MS.
 */
export const INBOX_DRAIN_MAX_MS = 1_500

/** ... and it stops waiting sooner once no message was taken for this long: no reader is there. */
export const INBOX_DRAIN_IDLE_MS = 300

/**
 * After ending the readers' streams at a stop, how long the node still answers a reader's next
 * `GET /messages` (with an immediate end) before it exits: `recv` takes one message per request,
 * and one between two requests met a closed socket (exit 1, "socket hang up").
 */
export const STREAMS_END_GRACE_MS = 100

/**
 * After the inbox closed at a stop, how long the node waits for the transport's iterator to hand
 * out what it still holds behind a full inbox (at most `receiveBufferMax`, 4,096 acknowledged
 * messages, counted in a few ms) and end, so the count of messages no reader took is whole.
 */
export const PUMP_END_WAIT_MS = 200

/**
 * The promise to job managers: after SIGTERM or SIGINT to the pid they started, or the death of
 * its launcher, no process of the command is left after this long (launcher poll + leave + exit).
 */
export const STOP_GRACE_MS = 5_000

/** Longest `--wait-ms` (`waitMs`) a send may wait for a route: ten minutes, beyond any convergence. */
export const SEND_WAIT_MS_MAX = 600_000

/** Largest message id (`--message-id`, `messageId=`): the transport's ids are unsigned 32-bit. */
export const MESSAGE_ID_MAX = 2 ** 32 - 1

/** How long `send` waits for a route by default, the transport's own routeWaitMs. */
export const SEND_WAIT_MS_DEFAULT = 10_000

/** How long probing an existing control socket or port for a live node may take before it counts as dead. */
export const CONTROL_PROBE_TIMEOUT_MS = 1_000

/**
 * A lock takeover (replacing the lock file of a process that died) is guarded by a directory
 * held for microseconds; one older than this was left by a process killed in that instant.
 */
export const LOCK_TAKEOVER_STALE_MS = 5_000
