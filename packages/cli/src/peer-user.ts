import { readFile } from 'node:fs/promises'
import type { Socket } from 'node:net'

/**
 * Who may use a control endpoint on a TCP port: the node's own user, and root (who can read its
 * key anyway). Every local user can connect to 127.0.0.1, so on a shared machine (a cluster's
 * login node, where jobs run) anyone could send as the node, claim or drop its names, join it to
 * another overlay (`POST /hubs`) and take its messages (`GET /messages`): found by hand,
 * `runuser -u nobody -- curl -X POST '127.0.0.1:<port>/names?add=stolen'` was obeyed by root's
 * node. A unix socket is made 0600 instead (control-endpoint.ts).
 *
 * The kernel's socket table (`/proc/net/tcp`, one line per socket with its owner's uid) names
 * the client: its socket is the one whose local end is our peer's address and port and whose
 * remote end is ours. Where there is no such table (not Linux) nobody is refused; where the table
 * does not show the connection, everyone is (the README says so).
 */
export const SOCKET_TABLES = ['/proc/net/tcp', '/proc/net/tcp6'] as const

/** One end of a connection as the socket table writes it: `0100007F:1CE8` for 127.0.0.1:7400 (IPv4 bytes reversed, hex); the port alone for another form. */
export function tableEnd(address: string | undefined, port: number): string {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0')
  if (address === undefined || !/^\d{1,3}(\.\d{1,3}){3}$/.test(address)) return hexPort
  return `${address.split('.').map((o) => Number(o).toString(16).toUpperCase().padStart(2, '0')).reverse().join('')}:${hexPort}`
}

/** The uid owning the client end of a connection, in a socket table's text; undefined if no line matches. `client` and `server` as `tableEnd` writes them. */
export function clientUidIn(table: string, client: string, server: string): number | undefined {
  const lines = table.split('\n')
  // The first line is the header: sl local_address rem_address st … uid timeout inode.
  for (let i = 1; i < lines.length; i++) {
    const fields = lines[i]!.trim().split(/\s+/)
    if (fields.length < 8) continue
    if (endsWith(fields[1]!, client) && endsWith(fields[2]!, server)) return Number(fields[7])
  }
  return undefined
}

/** `0100007F:1CE8` matches itself; a bare port matches any address with it. */
function endsWith(field: string, end: string): boolean {
  return end.includes(':') ? field === end : field.endsWith(`:${end}`)
}

/** Who is served: the node's user and root. */
export interface PeerUsers {
  /** This process's uid (the one the refusal names). */
  readonly ownUid: number
  /** Whether a connection from `uid` is served; default: `ownUid` or root. */
  readonly served?: (uid: number) => boolean
}

/** Why the connection must be refused (it comes from another user, or its user cannot be told), or undefined to serve it. */
export async function otherUserRefusal(socket: Socket, users: PeerUsers, tables: readonly string[] = SOCKET_TABLES): Promise<string | undefined> {
  const { ownUid } = users
  const served = users.served ?? ((uid: number) => uid === ownUid || uid === 0)
  if (socket.remotePort === undefined || socket.localPort === undefined) return undefined
  const client = tableEnd(socket.remoteAddress, socket.remotePort)
  const server = tableEnd(socket.localAddress, socket.localPort)
  let readable = false
  for (const file of tables) {
    const text = await readFile(file, 'utf8').catch(() => undefined)
    if (text === undefined) continue
    readable = true
    const uid = clientUidIn(text, client, server)
    if (uid === undefined) continue
    if (served(uid)) return undefined
    return `the connection comes from uid ${uid}: the control endpoint answers only its node's user (uid ${ownUid}) and root, since anyone using it can send as the node and take its messages`
  }
  // No table (not Linux): nothing to tell users apart by. A table without the connection: refused,
  // since it cannot be told whose it is (the client closed it already, or it is not loopback).
  return readable ? `the connection's user cannot be told (no line for ${client} in ${tables.join(', ')})` : undefined
}

/** One answer per connection: HTTP keep-alive sends many requests on it, asked about once. */
export class PeerUserGate {
  private readonly verdicts = new WeakMap<Socket, Promise<string | undefined>>()

  constructor(private readonly users: PeerUsers) {}

  refusal(socket: Socket): Promise<string | undefined> {
    let verdict = this.verdicts.get(socket)
    if (verdict === undefined) this.verdicts.set(socket, (verdict = otherUserRefusal(socket, this.users)))
    return verdict
  }
}
