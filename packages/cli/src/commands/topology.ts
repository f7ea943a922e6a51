import type { Command } from 'commander'
import type { Member, Topology } from '@phoenix-overlay/transport'
import { answerError, callControl, describeFailure, type ControlEndpoint } from '../control-client.ts'
import { clip, formatTable, shortId } from '../table.ts'
import { controlOption } from './inspect.ts'

/** The widest the names column gets, so a table stays within about 80 columns. */
const NAMES_WIDTH_MAX = 24

async function getJson<T>(endpoint: ControlEndpoint, path: string): Promise<{ json: T; text: string }> {
  const { status, text } = await callControl(endpoint, 'GET', path)
  if (status !== 200) throw answerError(status, describeFailure(status, text))
  return { json: JSON.parse(text) as T, text }
}

/**
 * One row per reachable node: its site and host with their colors (MPICH-G2's depths and colors),
 * hops, whether linked directly. This node first, then by site, host, hops and names: ordered by
 * full id, as the API gives them, the shortened ids read as no order at all.
 */
export function topologyTable(t: Topology): string {
  const links = new Set(t.links)
  const key = (n: Topology['nodes'][number]) => [n.id === t.self ? 0 : 1, n.colors[1]!, n.colors[2]!, n.nhops] as const
  const ordered = [...t.nodes].sort((a, b) => {
    const [ka, kb] = [key(a), key(b)]
    for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return ka[i]! - kb[i]!
    const [na, nb] = [a.names.join(','), b.names.join(',')]
    return na < nb ? -1 : na > nb ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0
  })
  const rows = ordered.map((n) => [
    shortId(n.id) + (n.id === t.self ? ' (self)' : ''),
    clip(n.names.join(',') || '-', NAMES_WIDTH_MAX),
    `${n.site}${n.siteDeclared ? '' : '*'}`,
    String(n.colors[1]),
    n.host,
    String(n.colors[2]),
    String(n.nhops),
    n.id === t.self ? '-' : links.has(n.id) ? 'direct' : shortId(n.nextHop),
  ])
  // The footnote explains the mark, so it comes only with one.
  const derived = t.nodes.some((n) => !n.siteDeclared)
  return formatTable(['node', 'names', 'site', 'color', 'host', 'color', 'hops', 'via'], rows, new Set([3, 5, 6])) + (derived ? '* site derived from the address (no --site)\n' : '')
}

/**
 * The members as a table, or one line saying that none matched: the header alone read as a
 * failed or unfinished command. A pattern is matched against whole names, so one without `*`
 * lists at most the name itself: the line says so.
 */
export function membersTable(pattern: string, members: readonly Member[]): string {
  if (members.length > 0) return formatTable(['name', 'node'], members.map((m) => [m.name, shortId(m.node)]))
  const hint = pattern.includes('*') ? '' : ` (a pattern matches whole names: '${pattern}*' also matches those that start with it)`
  return `no reachable name matches '${pattern}'${hint}\n`
}

export function registerTopologyCommands(program: Command): void {
  program
    .command('topology')
    .description("print the overlay's topology as a running node sees it: sites, hosts and their colors")
    .addOption(controlOption())
    .option('--json', 'print the JSON the control endpoint gives (full ids, levels, links)')
    .action(async (o: { control: ControlEndpoint; json?: boolean }) => {
      const { json, text } = await getJson<Topology>(o.control, '/topology')
      process.stdout.write(o.json === true ? text : topologyTable(json))
    })

  program
    .command('members')
    .description('print the reachable names matching a pattern (`*` matches any characters) and their owners')
    .argument('<pattern>', 'a name pattern, like "worker/*"')
    .addOption(controlOption())
    .option('--json', 'print [{"name","node"}] with full ids')
    .action(async (pattern: string, o: { control: ControlEndpoint; json?: boolean }) => {
      const { json, text } = await getJson<Member[]>(o.control, `/members?pattern=${encodeURIComponent(pattern)}`)
      process.stdout.write(o.json === true ? text : membersTable(pattern, json))
    })
}
