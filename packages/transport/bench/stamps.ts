/**
 * What the path benches (`ends-path.ts`, `relay-path.ts`) share: stamps on a method's entry and
 * exit, a pause back to back or asleep, and order statistics.
 */

/** The stamps taken so far, `[label in|out, performance.now()]`; a bench empties it between series. */
export const marks: [string, number][] = []

/** Wraps `proto[method]` so each call stamps `label in` and `label out` into `marks`. */
export function stamped(proto: Record<string, unknown>, method: string, label: string): void {
  const original = proto[method] as (...args: unknown[]) => unknown
  proto[method] = function (this: unknown, ...args: unknown[]) {
    marks.push([`${label} in`, performance.now()])
    const result = original.apply(this, args)
    marks.push([`${label} out`, performance.now()])
    return result
  }
}

/** The next macrotask (back to back), or `sleepMs` asleep. */
export const pause = (asleep: boolean, sleepMs: number) => new Promise((resolve) => (asleep ? setTimeout(resolve, sleepMs) : setImmediate(resolve)))
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!
export const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.floor(q * (xs.length - 1))]!
