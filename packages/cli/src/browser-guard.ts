import type { IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * Why a request to the control endpoint comes from a web page and is refused; undefined for what
 * this machine's programs send (the CLI, curl, a Prometheus scraper) and for the overlay page it
 * serves itself (`GET /`, same origin).
 *
 * The endpoint has no credentials: on 127.0.0.1 whatever runs on the machine may use it. A web
 * page does not run on the machine, but the operator's browser does, and it sends what a page
 * asks without asking anyone: a form or `fetch` POST with a text body needs no CORS preflight, so
 * any site the operator visited could send messages as the node, claim names, or add a hub of its
 * own (`POST /hubs`), joining the node to another overlay; an `<img>` pointing at `GET /messages`
 * took a message from the inbox. A site whose name it resolves to 127.0.0.1 (DNS rebinding) could
 * also read the answers. Found by hand: `curl -H 'Origin: http://evil.example' -X POST
 * …/names?add=planted` was obeyed. Browsers mark such requests, and programs do not send the marks:
 * - `Origin` on every cross-origin request and every POST: it must be the endpoint's own;
 * - `Sec-Fetch-Site` (every current browser), on GETs too: only `same-origin` or `none` (typed in);
 * - `Host`: a rebound name arrives with its own; on TCP it must name the loopback address.
 * A unix socket is out of any browser's reach: nothing is checked there.
 */
export function browserRefusal(req: IncomingMessage, address: AddressInfo | string | null): string | undefined {
  if (typeof address !== 'object' || address === null) return undefined
  const own = new Set([`127.0.0.1:${address.port}`, `localhost:${address.port}`, `[::1]:${address.port}`])
  const site = req.headers['sec-fetch-site']
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return `Sec-Fetch-Site: ${site}`
  const origin = req.headers.origin
  if (origin !== undefined && !(origin.startsWith('http://') && own.has(origin.slice('http://'.length)))) return `Origin: ${origin}`
  const host = req.headers.host
  if (host !== undefined && !own.has(host)) return `Host: ${host}`
  return undefined
}
