/**
 * Refusing the keys a settings object does not take. A misspelt option was ignored without a word:
 * `createPhoenixLibp2p({ hub: [...] })` (for `hubs`) started a node that never connected, and
 * `timing: { coHubWaitMS: 500 }` changed nothing (found by hand). TypeScript catches these in an
 * object literal, but not in JavaScript, in options built elsewhere, or read from a file.
 */
export function unknownKeyProblem(given: object | undefined, known: readonly string[], what: string): string | undefined {
  if (given === undefined) return undefined
  for (const key of Object.keys(given)) {
    if (known.includes(key)) continue
    const near = nearestKey(key, known)
    return `${what}.${key} is not an option${near === undefined ? `; ${what} takes ${known.join(', ')}` : ` (did you mean ${what}.${near}?)`}`
  }
  return undefined
}

/** The known key a misspelling most likely meant: the same but for case, else the one at most two edits away (the first of the nearest). */
function nearestKey(key: string, known: readonly string[]): string | undefined {
  const lower = key.toLowerCase()
  const sameButCase = known.find((k) => k.toLowerCase() === lower)
  if (sameButCase !== undefined) return sameButCase
  let best: string | undefined
  let bestDistance = NEAR_EDITS_MAX + 1
  for (const candidate of known) {
    const distance = editDistance(lower, candidate.toLowerCase())
    if (distance < bestDistance) {
      best = candidate
      bestDistance = distance
    }
  }
  return best
}

/** How many edits away a misspelling may be to be suggested: more suggests unrelated keys. */
const NEAR_EDITS_MAX = 2

/** Levenshtein distance; keys are short (tens of characters), so the quadratic table is small. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
    previous = current
  }
  return previous[b.length]!
}
