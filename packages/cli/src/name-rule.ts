import { DEFAULT_LIMITS, REFUSED_CHARACTERS_RULE, hasRefusedCharacters, quoteEscaped } from '@phoenix-overlay/core'

/**
 * Why no node can hold `name` (the core's rule: non-empty, at most nameLengthMax characters, none
 * of the characters police.ts refuses), or undefined. `recv --name` and `GET /messages?name=`
 * refuse such a name at once: waiting for its messages would wait for good.
 */
export function nameProblem(name: string): string | undefined {
  if (name === '') return 'must be a non-empty name'
  if (name.length > DEFAULT_LIMITS.nameLengthMax) return `is ${name.length} characters, more than ${DEFAULT_LIMITS.nameLengthMax} (nameLengthMax)`
  if (hasRefusedCharacters(name)) return `${quoteEscaped(name)} ${REFUSED_CHARACTERS_RULE}`
  return undefined
}
