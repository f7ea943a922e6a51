/**
 * The namespace scripts (scenario.ts, setup-profile.ts, ssh-throughput.ts, gateways-bench.ts,
 * simulations/netns-figures.ts) remove what they built in `finally`, which an interrupt skips:
 * Ctrl-C or a `kill` left namespaces, veths, nftables and node processes behind. On SIGINT or
 * SIGTERM this removes the namespaces the process itself added (`createdNamespaces`, by name;
 * nobody else's), with the processes inside them, runs the script's own extra clean-up, and exits
 * 130 or 143, as a shell reports a process killed by that signal.
 */
import { spawnSync } from 'node:child_process'
import { createdNamespaces } from './topology.ts'

const EXIT_CODE = { SIGINT: 130, SIGTERM: 143 } as const

/** Synchronous clean-ups registered by what a run built (temporary directories): a handful per run. */
const extraCleanups = new Set<() => void>()
let installed = false

/** Registers a synchronous clean-up for an interrupt (it runs only if a handler is installed); returns its removal. */
export function onInterrupt(cleanup: () => void): () => void {
  extraCleanups.add(cleanup)
  return () => extraCleanups.delete(cleanup)
}

/** Kills the processes in each namespace this process added, then deletes it. Synchronous: it runs in a signal handler, before exit. */
export function removeCreatedNamespacesSync(): string[] {
  const removed: string[] = []
  for (const ns of [...createdNamespaces]) {
    const pids = spawnSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).stdout?.split('\n').filter(Boolean) ?? []
    for (const pid of pids) {
      try {
        process.kill(Number(pid), 'SIGKILL')
      } catch {
        // already gone
      }
    }
    spawnSync('ip', ['netns', 'del', ns])
    createdNamespaces.delete(ns)
    removed.push(ns)
  }
  return removed
}

/**
 * Installs the SIGINT/SIGTERM handlers (once per process). `extra`: more synchronous clean-up
 * (temporary directories, processes started outside the namespaces), run before the namespaces go.
 */
export function cleanUpOnSignals(extra?: () => void): void {
  if (extra !== undefined) extraCleanups.add(extra)
  if (installed) return
  installed = true
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      for (const cleanup of extraCleanups) {
        try {
          cleanup()
        } catch (error) {
          console.error(`clean-up after ${signal}: ${(error as Error).message}`)
        }
      }
      const removed = removeCreatedNamespacesSync()
      console.error(`${signal}: removed ${removed.length} namespaces this run created`)
      process.exit(EXIT_CODE[signal])
    })
  }
}
