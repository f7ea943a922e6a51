#!/usr/bin/env node
// The CLI runs from TypeScript source (no build step): register tsx's loader, then load main.
import { register } from 'tsx/esm/api'

register()
await import('../src/main.ts')
