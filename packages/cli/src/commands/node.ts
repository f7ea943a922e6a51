import { Command, Option } from 'commander'
import { parseControl } from '../control-client.ts'
import type { NodeOptions } from '../node-runner.ts'

const collect = (value: string, previous: string[]) => [...previous, value]

export function registerNodeCommand(program: Command, version: string): void {
  program
    .command('node')
    .description('run one overlay node until SIGTERM, SIGINT or SIGHUP, or its launcher exits (then leave gracefully)')
    .option('--listen <multiaddr>', 'listen address (repeatable; default /ip4/127.0.0.1/tcp/0)', collect, [] as string[])
    .option('--hub <multiaddr>', 'a hub known at start (repeatable); everything else is discovered', collect, [] as string[])
    .option('--name <name>', 'a logical name of this node (repeatable)', collect, [] as string[])
    .option('--key <file>', 'identity key file (libp2p protobuf); created if missing; locked while the node runs')
    .option('--control <port|socket>', 'serve the control endpoint on 127.0.0.1:<port> or a unix socket path', parseControl)
    .option('--print', 'write received messages to stdout, one JSON line each (status lines go to stderr)')
    .addOption(new Option('--mode <mode>', 'routing mode').choices(['optimized', 'naive']).default('optimized'))
    .option('--no-sign', 'do not sign and verify origin records')
    .option('--no-discovery', 'dial only the --hub addresses (give it every connection it should open)')
    .option('--psk <file>', 'join only the private network with this pre-shared key (libp2p pnet swarm key)')
    .option('--site <label>', "this node's site in `phoenix topology` (default: its address's /24 or /64); carried in its record")
    .option('--allow <peerId>', 'accept and dial only these peers (repeatable)', collect, [] as string[])
    .option('--listen-range <first-last>', 'listen on the first free port of this range (replaces port 0 of the --listen addresses), e.g. 7000-7010')
    .option('--site-prefix <cidr>', "a private prefix this node's site routes beyond its own subnets (repeatable); other private addresses are not dialled", collect, [] as string[])
    .option('--ssh-identity <file>', 'private key for SSH tunnels: dial neighbours advertised as /…/tcp/22/ssh/<user>/… through ssh')
    .option('--ssh-known-hosts <file>', 'known_hosts file for SSH servers (default ~/.ssh/known_hosts; unknown hosts are learned unless --ssh-strict-host-keys)')
    .option('--ssh-strict-host-keys', 'refuse SSH servers not already in the known_hosts file')
    .option('--ssh-config <file>', 'an ssh_config file for the tunnels (ssh -F)')
    .option('--ssh-advertise <user@host[:port]>', 'advertise this node as reachable by logging in to this SSH server (a gateway of an SSH-only site)')
    .action(async (options: NodeOptions) => {
      if (options.listen.length === 0) options.listen = ['/ip4/127.0.0.1/tcp/0']
      // Loaded here, not at the top: libp2p takes most of a second to load, and only `node` needs it.
      const { runNode } = await import('../node-runner.ts')
      await runNode(options, version)
    })
}
