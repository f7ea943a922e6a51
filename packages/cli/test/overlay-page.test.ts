import { afterAll, describe, expect, it } from 'vitest'
import { Chromium } from './chromium.ts'
import { startNode, type Started } from './helpers.ts'

interface Shown {
  nodes: { label: string; color: string; site: string }[]
  links: string[][]
  vias: string[][]
  status: string
  legend: string
}

/** What the page draws, read from its cytoscape instance and its header. */
const SHOWN = `(() => {
  const cy = window.overlay?.cy
  if (!cy || window.overlay.updates === 0) return undefined
  const label = (id) => cy.getElementById(id).data('label')
  return {
    nodes: cy.nodes().map((n) => ({ label: n.data('label'), color: n.style('background-color'), site: n.data('site') })).sort((a, b) => a.label.localeCompare(b.label)),
    links: cy.edges('[kind = "link"]').map((e) => [label(e.source().id()), label(e.target().id())]).sort(),
    vias: cy.edges('[kind = "via"]').map((e) => [label(e.source().id()), label(e.target().id())]).sort(),
    status: document.getElementById('status').textContent,
    legend: document.getElementById('legend').textContent,
  }
})()`

describe('the overlay page (GET /) in headless Chromium', () => {
  const nodes: Started[] = []
  let browser: Chromium | undefined
  afterAll(() => {
    browser?.close()
    for (const n of nodes) n.killGroup()
  })

  it('draws the nodes colored by site, the direct links, the route to a chosen name, and follows a leave', async () => {
    const port = 25000 + (process.pid % 400) * 10
    const hub = startNode(['--name', 'hub', '--site', 'east', '--control', String(port)])
    nodes.push(hub)
    const address = (await hub.waitFor(/listening on (\S+)/))[1]!
    const west = ['w1', 'w2'].map((name) => startNode(['--name', name, '--site', 'west', '--hub', address]))
    nodes.push(...west)
    await Promise.all(west.map((n) => n.waitFor(/listening on/)))
    browser = await Chromium.open(`http://127.0.0.1:${port}/`)
    const shown = await browser.until<Shown>(SHOWN, (s) => s.nodes.length === 3, 30_000)
    expect(shown.nodes.map((n) => `${n.label}:${n.site}`)).toEqual(['hub:east', 'w1:west', 'w2:west'])
    // One color per site: the two west nodes share one, the hub has another.
    expect(shown.nodes[1]!.color).toBe(shown.nodes[2]!.color)
    expect(shown.nodes[0]!.color).not.toBe(shown.nodes[1]!.color)
    expect(shown.links).toEqual([['hub', 'w1'], ['hub', 'w2']])
    expect(shown.vias).toEqual([])
    expect(shown.status).toMatch(/^3 nodes in 2 sites, 2 direct links; updated /)
    expect(shown.legend).toBe('eastwest')
    // The route to a chosen name: highlighted, and given as the ids along it.
    expect(await browser.evaluate<number>(`window.overlay.route('w2').length`)).toBe(2)
    expect(await browser.evaluate<string[]>(`window.overlay.cy.$('.route').map((e) => e.isNode() ? e.data('label') : 'edge').sort()`)).toEqual(['edge', 'hub', 'w2'])

    // Live: w2 leaves, and the page drops it.
    process.kill(west[1]!.pid, 'SIGTERM') // a graceful leave
    const after = await browser.until<Shown>(SHOWN, (s) => s.nodes.length === 2, 20_000)
    expect(after.nodes.map((n) => n.label)).toEqual(['hub', 'w1'])
    expect(after.links).toEqual([['hub', 'w1']])
    expect(await browser.evaluate<number>(`window.overlay.route('w2').length`)).toBe(0)
  }, 90_000)
})
