/**
 * Node's flags for a child process that runs this repository's TypeScript sources on the
 * workspace's Node 24 without tsx: Node transforms the sources itself (parameter properties and
 * the wire's generated enums need the transform, not mere stripping), and its warning that the
 * transform is experimental stays off stderr, which tests read. A start costs about a third of
 * the CPU it costs through tsx's loader, whose hooks run on a thread of their own (packages/cli
 * README, "tsx"). `packages/cli/bin/phoenix` passes the same two to the `phoenix` command.
 */
export const NODE_TS_FLAGS: readonly string[] = ['--experimental-transform-types', '--disable-warning=ExperimentalWarning']
