import { spawn, spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTopology, missingPrerequisite, type NetnsNode, type Topology } from './topology.ts'
import { connectScript, listenScript, runInNamespace } from './probe.ts'

// No skipping: on a machine without root or tools this fails with the reason (CI runs as root
// and installs nftables in .ci/run).
const prerequisite = missingPrerequisite()

describe('firewalled subnets in network namespaces', () => {
  let topology: Topology
  const node = (id: string): NetnsNode => topology.nodes.find((n) => n.id === id)!
  const listeners: ReturnType<typeof spawn>[] = []
  const DROP_TIMEOUT_MS = 1_500

  beforeAll(async () => {
    if (prerequisite !== undefined) throw new Error(`netns tests cannot run here: ${prerequisite}`)
    topology = await buildTopology([
      { name: 'A', family: 'ipv4', size: 3 },
      { name: 'B', family: 'ipv4', size: 2 },
      { name: 'C', family: 'ipv6', size: 3 },
    ])
    // Listeners on the gateway port everywhere, and on a second port at A's gateway.
    const listen = async (n: NetnsNode, host: string, port: number) => {
      const child = spawn('ip', ['netns', 'exec', n.namespace, process.execPath, '--input-type=module', '-e', listenScript(host, port)])
      listeners.push(child)
      await new Promise<void>((resolve, reject) => {
        child.stdout!.once('data', () => resolve())
        child.once('exit', (code) => reject(new Error(`listener in ${n.namespace} exited with ${code}`)))
      })
    }
    for (const n of topology.nodes) await listen(n, n.ipv6 !== undefined && n.ipv4 !== undefined ? '::' : (n.ipv4 ?? n.ipv6)!, topology.gatewayPort)
    await listen(node('A0'), node('A0').ipv4!, topology.gatewayPort + 1)
  }, 120_000)

  afterAll(async () => {
    for (const l of listeners) l.kill('SIGKILL')
    await topology?.destroy()
  })

  const connect = async (from: string, host: string, port: number) => JSON.parse(await runInNamespace(node(from).namespace, connectScript(host, port, DROP_TIMEOUT_MS))) as { ok: boolean; code: string; ms: number }

  it('inside a subnet every node reaches every other', async () => {
    expect(await connect('A1', node('A2').ipv4!, topology.gatewayPort)).toMatchObject({ ok: true })
    expect(await connect('C1', node('C2').ipv6!, topology.gatewayPort)).toMatchObject({ ok: true })
  })

  it("across subnets only a gateway accepts, and only on the gateway port", async () => {
    expect(await connect('B1', node('A0').ipv4!, topology.gatewayPort)).toMatchObject({ ok: true })
    expect(await connect('A1', node('B0').ipv4!, topology.gatewayPort)).toMatchObject({ ok: true })
    expect(await connect('A1', node('C0').ipv4!, topology.gatewayPort)).toMatchObject({ ok: true })
  })

  it('a forbidden connection is dropped: it times out instead of being refused', async () => {
    for (const [from, to, port] of [['B1', 'A1', topology.gatewayPort], ['B1', 'A0', topology.gatewayPort + 1]] as const) {
      const result = await connect(from, node(to).ipv4!, port)
      expect(result).toMatchObject({ ok: false, code: 'TIMEOUT' })
      expect(result.ms).toBeGreaterThanOrEqual(DROP_TIMEOUT_MS - 50)
    }
  })

  it('the IPv6-only subnet has no IPv4: its hosts reach IPv4 subnets only through their dual-stacked gateway', async () => {
    expect(node('C1').ipv4).toBeUndefined()
    expect(node('C0').ipv4).toBeDefined()
    const result = await connect('C1', node('A0').ipv4!, topology.gatewayPort)
    expect(result.ok).toBe(false)
    expect(result.code).toMatch(/ENETUNREACH|EHOSTUNREACH/)
    expect(await connect('C1', node('C0').ipv6!, topology.gatewayPort)).toMatchObject({ ok: true })
  })

  it('cleans up every namespace it made, even when the build fails half-way', async () => {
    const prefix = 'phxfail-'
    await expect(buildTopology([{ name: 'A', family: 'ipv4', size: 2 }, { name: 'a', family: 'ipv4', size: 1 }], { prefix })).rejects.toThrow(/one capital letter/)
    const stray = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout.split('\n').filter((l) => l.startsWith(prefix))
    expect(stray).toEqual([])
  })

  it('refuses with a clear message when it lacks root', () => {
    const topology = fileURLToPath(new URL('./topology.ts', import.meta.url))
    const script = `import { buildTopology } from ${JSON.stringify(topology)}
buildTopology([{ name: 'A', family: 'ipv4', size: 1 }]).then(() => console.log('built'), (e) => console.log(e.message))`
    const nobody = ['--reuid=65534', '--regid=65534', '--clear-groups']
    // As the user nobody where nobody can read the checkout and its Node. A clone in a private
    // directory (mode 0700, as mktemp makes them) cannot be read so: there the process stays root
    // and only its uid reads as nobody's, which is what the refusal asks (topology.ts).
    const readable = spawnSync('setpriv', [...nobody, 'test', '-r', topology, '-a', '-x', process.execPath]).status === 0
    const node = ['--input-type=module', '-e', script]
    const result = readable ? spawnSync('setpriv', [...nobody, process.execPath, ...node], { encoding: 'utf8' }) : spawnSync(process.execPath, ['--import', 'data:text/javascript,process.getuid=()=>65534', ...node], { encoding: 'utf8' })
    expect(result.stdout.trim()).toBe('cannot build network namespaces: network namespaces need root (run the tests as root, as CI does)')
  })
})
