#!/usr/bin/env node
// The `phoenix` command as installed from the npm registry: the CLI built to JavaScript, no
// TypeScript loader. `/usr/bin/env` execs Node in place of itself, so the pid a job manager
// starts is Node's own and SIGTERM reaches it. (In this repository `npx phoenix` runs
// packages/cli/bin/phoenix instead, from source.)
await import('@phoenix-overlay/cli')
