#!/usr/bin/env node
// The CLI runs from TypeScript source (no build step). Node's compile cache (in the OS's temp
// directory) keeps the compiled modules between runs: a `phoenix node` start costs about a third
// of the CPU with it. When Node transforms TypeScript itself (`--experimental-transform-types`,
// which `bin/phoenix` passes to the workspace's Node 24), main.ts is imported as it is; otherwise
// tsx's loader is registered first. Its hooks run on a worker thread, which doubles a start's CPU:
// 2.5 s of CPU against 0.8 s with Node's own transform and the cache (CPU profiles of
// `phoenix node` up to its "control endpoint on" line, this repository's 2-core machine).
import module from 'node:module'

module.enableCompileCache?.()
if (process.features.typescript !== 'transform') {
  const { register } = await import('tsx/esm/api')
  register()
}
await import('../src/main.ts')
