/**
 * `GET /` on the control endpoint: a page that draws the overlay as this node sees it, with
 * cytoscape (vendored from the npm registry as a dependency, served from `/assets/cytoscape.mjs`;
 * see the README's "Libraries and why"). Nodes are colored by site (their site color), solid
 * edges are this node's direct links, a dashed edge goes from the next hop to each node further
 * away (labelled with the hops left: this node knows the first hop and the distance, not the
 * rest of the path). Choosing a name highlights the route to it. It polls `GET /topology` every
 * second, so joins and leaves show within about a second plus the overlay's own lateness.
 *
 * For tests and scripts the page keeps its state in `window.overlay`: `{ cy, updates, route(name) }`.
 */
import { readFile } from 'node:fs/promises'
import type { ServerResponse } from 'node:http'
import { fileURLToPath } from 'node:url'

/** How often the page asks for the topology (ms). */
export const OVERLAY_PAGE_REFRESH_MS = 1_000

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Phoenix overlay</title>
<style>
  body { margin: 0; font: 14px system-ui, sans-serif; display: flex; flex-direction: column; height: 100vh; }
  header { padding: 8px 12px; border-bottom: 1px solid #ddd; display: flex; gap: 16px; align-items: center; flex-wrap: wrap; }
  #graph { flex: 1; }
  .site { display: inline-flex; align-items: center; gap: 4px; margin-right: 8px; }
  .swatch { width: 12px; height: 12px; border-radius: 50%; display: inline-block; }
</style>
</head>
<body>
<header>
  <strong>Phoenix overlay</strong>
  <span id="status">loading…</span>
  <label>route to <select id="route"><option value="">(choose a name)</option></select></label>
  <span id="legend"></span>
</header>
<div id="graph"></div>
<script type="module">
import cytoscape from '/assets/cytoscape.mjs'
const PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf']
const cy = cytoscape({
  container: document.getElementById('graph'),
  style: [
    { selector: 'node', style: { 'background-color': 'data(color)', label: 'data(label)', 'font-size': 11, 'text-valign': 'bottom', 'text-margin-y': 4 } },
    { selector: 'node[?self]', style: { 'border-width': 4, 'border-color': '#000' } },
    { selector: 'edge', style: { width: 2, 'line-color': '#999', 'curve-style': 'bezier' } },
    { selector: 'edge[kind = "via"]', style: { 'line-style': 'dashed', label: 'data(label)', 'font-size': 9, 'target-arrow-shape': 'triangle', 'target-arrow-color': '#999' } },
    { selector: 'edge.route', style: { 'line-color': '#e00', 'target-arrow-color': '#e00', width: 4 } },
    { selector: 'node.route', style: { 'border-color': '#e00', 'border-width': 4 } },
  ],
})
const overlay = { cy, updates: 0, topology: undefined, chosen: '', route }
window.overlay = overlay
const select = document.getElementById('route')
select.addEventListener('change', () => route(select.value))

/** Highlights the route to the node owning \`name\`; returns the ids on it (this node first). */
function route(name) {
  overlay.chosen = name
  if (select.value !== name && [...select.options].some((o) => o.value === name)) select.value = name
  cy.elements().removeClass('route')
  const t = overlay.topology
  const target = t?.nodes.find((n) => n.names.includes(name))
  if (!t || !target) return []
  const path = target.id === t.self ? [t.self] : target.nextHop === target.id ? [t.self, target.id] : [t.self, target.nextHop, target.id]
  for (let i = 0; i < path.length; i++) {
    cy.getElementById(path[i]).addClass('route')
    if (i > 0) cy.edges().filter((e) => (e.source().id() === path[i - 1] && e.target().id() === path[i]) || (e.source().id() === path[i] && e.target().id() === path[i - 1])).addClass('route')
  }
  return path
}

function elementsOf(t) {
  const links = new Set(t.links)
  const nodes = t.nodes.map((n) => ({ group: 'nodes', data: { id: n.id, label: n.names[0] ?? n.id.slice(-8), site: n.site, color: PALETTE[n.colors[1] % PALETTE.length], self: n.id === t.self, nhops: n.nhops } }))
  const edges = []
  for (const peer of t.links) if (t.nodes.some((n) => n.id === peer)) edges.push({ group: 'edges', data: { id: 'link ' + peer, source: t.self, target: peer, kind: 'link' } })
  for (const n of t.nodes) {
    if (n.id === t.self || links.has(n.id)) continue
    edges.push({ group: 'edges', data: { id: 'via ' + n.id, source: n.nextHop, target: n.id, kind: 'via', label: (n.nhops - 1) + ' hop' + (n.nhops === 2 ? '' : 's') } })
  }
  return [...nodes, ...edges]
}

async function refresh() {
  try {
    const t = await (await fetch('/topology')).json()
    overlay.topology = t
    const want = elementsOf(t)
    const wanted = new Set(want.map((e) => e.data.id))
    let changed = false
    cy.batch(() => {
      cy.elements().filter((e) => !wanted.has(e.id())).forEach((e) => { e.remove(); changed = true })
      for (const e of want) {
        const have = cy.getElementById(e.data.id)
        if (have.nonempty()) have.data(e.data)
        else if (e.group === 'nodes' || (cy.getElementById(e.data.source).nonempty() || want.some((x) => x.data.id === e.data.source))) { cy.add(e); changed = true }
      }
    })
    if (changed) cy.layout({ name: 'cose', animate: false }).run()
    const sites = new Map(t.nodes.map((n) => [n.site, PALETTE[n.colors[1] % PALETTE.length]]))
    document.getElementById('legend').innerHTML = [...sites].map(([s, c]) => '<span class="site"><span class="swatch" style="background:' + c + '"></span>' + s.replace(/[<&]/g, '') + '</span>').join('')
    document.getElementById('status').textContent = t.nodes.length + ' nodes in ' + sites.size + ' sites, ' + t.links.length + ' direct links; updated ' + new Date().toLocaleTimeString()
    const names = t.nodes.flatMap((n) => n.names).sort()
    if (select.options.length - 1 !== names.length || names.some((n, i) => select.options[i + 1].value !== n)) {
      select.replaceChildren(new Option('(choose a name)', ''), ...names.map((n) => new Option(n, n, false, n === overlay.chosen)))
    }
    route(overlay.chosen)
    overlay.updates++
  } catch (error) {
    document.getElementById('status').textContent = 'the node does not answer: ' + error.message
  }
}
refresh()
setInterval(refresh, ${OVERLAY_PAGE_REFRESH_MS})
</script>
</body>
</html>
`

const CYTOSCAPE_PATH = fileURLToPath(import.meta.resolve('cytoscape/dist/cytoscape.esm.min.mjs'))
let cytoscapeSource: Promise<Buffer> | undefined

/** Answers `GET /` and `GET /assets/cytoscape.mjs`; false for any other path. */
export async function serveOverlayPage(path: string, res: ServerResponse): Promise<boolean> {
  if (path === '/') {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
    res.end(PAGE)
    return true
  }
  if (path === '/assets/cytoscape.mjs') {
    cytoscapeSource ??= readFile(CYTOSCAPE_PATH)
    const body = await cytoscapeSource
    res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'max-age=3600' })
    res.end(body)
    return true
  }
  return false
}
