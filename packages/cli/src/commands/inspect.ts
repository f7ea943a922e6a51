import { Command, Option } from 'commander'
import { answerError, callControl, describeFailure, parseControl, type ControlEndpoint } from '../control-client.ts'
import { clip, formatTable, shortId } from '../table.ts'

/** A route as `GET /routes` gives it (the core's RouteView). */
interface RouteRow {
  destination: string
  fwd?: string
  /** Every next hop at this (seq, nhops), `fwd` among them (several gateways). */
  alternates?: string[]
  nhops: number
  seq: number
  reachable: boolean
  names: string[]
}

/** The widest the names column gets, so a table stays within about 80 columns. */
const NAMES_WIDTH_MAX = 28

export const controlOption = () => new Option('--control <port|socket>', "the node's control endpoint").argParser(parseControl).makeOptionMandatory()

async function getJson<T>(endpoint: ControlEndpoint, path: string): Promise<{ json: T; text: string }> {
  const { status, text } = await callControl(endpoint, 'GET', path)
  if (status !== 200) throw answerError(status, describeFailure(status, text))
  return { json: JSON.parse(text) as T, text }
}

/**
 * What `routes` and `peers` print for a node that has none: one line saying so and what connects
 * a node, where the table's header alone read as a failed or unfinished command.
 */
export const NO_ROUTES_LINE = 'no routes: this node knows no other node yet (a node started with --hub <its address>, or this one with --hub <another>, connects them)\n'
export const NO_PEERS_LINE = 'no neighbours: this node is connected to no other node (a node started with --hub <its address>, or this one with --hub <another>, connects them)\n'

/** Routes as rows: reachable first, then by hops and name; ids shortened, names clipped. */
export function routesTable(routes: readonly RouteRow[]): string {
  if (routes.length === 0) return NO_ROUTES_LINE
  const sorted = [...routes].sort((a, b) => Number(b.reachable) - Number(a.reachable) || a.nhops - b.nhops || a.names.join().localeCompare(b.names.join()))
  const rows = sorted.map((r) => [
    shortId(r.destination),
    clip(r.names.join(',') || '-', NAMES_WIDTH_MAX),
    nextHopCell(r),
    r.reachable ? String(r.nhops) : '∞',
    String(r.seq),
  ])
  return formatTable(['destination', 'names', 'next hop', 'hops', 'seq'], rows, new Set([3, 4]))
}

/** `fwd`, and how many other next hops the route has (`+1`: a second gateway). */
function nextHopCell(r: RouteRow): string {
  if (!r.reachable || r.fwd === undefined) return '-'
  if (r.fwd === r.destination) return 'direct'
  const others = (r.alternates?.length ?? 1) - 1
  return others > 0 ? `${shortId(r.fwd)} +${others}` : shortId(r.fwd)
}

/** Neighbours with the names their routes carry. */
export function peersTable(peers: readonly string[], routes: readonly RouteRow[]): string {
  if (peers.length === 0) return NO_PEERS_LINE
  const namesOf = new Map(routes.map((r) => [r.destination, r.names]))
  return formatTable(['peer', 'names'], peers.map((p) => [shortId(p), clip((namesOf.get(p) ?? []).join(',') || '-', NAMES_WIDTH_MAX * 2)]))
}

export function registerInspectCommands(program: Command): void {
  program
    .command('routes')
    .description("print a running node's routing table (ids shortened; --json for everything)")
    .addOption(controlOption())
    .option('--json', 'print the JSON the control endpoint gives (full ids, addresses)')
    .action(async (o: { control: ControlEndpoint; json?: boolean }) => {
      const { json, text } = await getJson<RouteRow[]>(o.control, '/routes')
      process.stdout.write(o.json === true ? text : routesTable(json))
    })

  program
    .command('peers')
    .description("print a running node's neighbours and their names")
    .addOption(controlOption())
    .option('--json', 'print [{"id","names"}] with full ids')
    .action(async (o: { control: ControlEndpoint; json?: boolean }) => {
      const [{ json: peers }, { json: routes }] = await Promise.all([getJson<string[]>(o.control, '/peers'), getJson<RouteRow[]>(o.control, '/routes')])
      if (o.json !== true) return void process.stdout.write(peersTable(peers, routes))
      const namesOf = new Map(routes.map((r) => [r.destination, r.names]))
      process.stdout.write(`${JSON.stringify(peers.map((id) => ({ id, names: namesOf.get(id) ?? [] })))}\n`)
    })
}
