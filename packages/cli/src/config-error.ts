/**
 * A configuration error: the command line itself is wrong (an option's value, or a file an option
 * names is missing or malformed), so running it again unchanged fails the same way. `phoenix`
 * exits with status 2 for it, as for a malformed or unknown option (main.ts); every other failure
 * (an address, key or control endpoint in use, no route, a node not answering) exits 1, and may
 * pass when retried.
 */
export class ConfigError extends Error {
  readonly exitCode = 2
}
