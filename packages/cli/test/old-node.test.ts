import { spawnSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { NODE_TS, PHOENIX_JS, REPO } from './helpers.ts'

/** A module Node loads first that makes `process.versions.node` read as Node 20's (the installed package does run there). */
const AS_NODE_20 = `data:text/javascript,Object.defineProperty(process.versions,"node",{value:"20.20.2"})`

describe('phoenix node under a Node older than 22', () => {
  it('refuses at once in one line naming both versions (it used to start, listen, and never connect)', () => {
    const run = spawnSync(process.execPath, [...NODE_TS, '--import', AS_NODE_20, PHOENIX_JS, 'node', '--listen', '/ip4/127.0.0.1/tcp/0'], { cwd: REPO, encoding: 'utf8', timeout: 30_000 })
    expect(run.status, run.stderr).toBe(1)
    expect(run.stdout).toBe('')
    expect(run.stderr.trim().split('\n')).toEqual(['phoenix: phoenix-overlay needs Node 22 or later (libp2p 3 does: it calls Promise.withResolvers); this is Node 20.20.2'])
  })

  it('phoenix sim, which needs no libp2p, still runs there', () => {
    const run = spawnSync(process.execPath, [...NODE_TS, '--import', AS_NODE_20, PHOENIX_JS, 'sim', 'simulations/scenarios/paper-3-subnets.json', '--nodes', '30'], { cwd: REPO, encoding: 'utf8', timeout: 60_000 })
    expect(run.status, run.stderr).toBe(0)
    expect(run.stderr).toMatch(/tables match BFS/)
  })
})
