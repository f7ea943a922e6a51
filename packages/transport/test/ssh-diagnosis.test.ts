import { describe, expect, it } from 'vitest'
import { diagnose, FATAL_SSH_ERRORS, forwardRefusal, lastWords, type SshContext } from '../src/ssh-diagnosis.ts'

// OpenSSH 9's messages for failures a loopback sshd does not stage easily (a name that does not
// resolve, a server that dies silently, a broken option); `ssh-tunnel.test.ts` covers the rest
// against a real sshd.
const ctx: SshContext = {
  label: 'ssh phoenix@gw.example.org:22 → 127.0.0.1:7000',
  user: 'phoenix',
  host: 'gw.example.org',
  port: 22,
  target: '127.0.0.1:7000',
  identityFile: 'keys/id_ed25519',
  knownHostsFile: 'keys/known_hosts',
  optionNames: { identityFile: '--ssh-identity', knownHostsFile: '--ssh-known-hosts' },
}
const exited = { code: 255, signal: null }
const debug = ['debug1: Reading configuration data /dev/null', 'debug1: Connecting to gw.example.org port 22.']

describe('ssh diagnoses', () => {
  it('names the cause of each failure in one line, and says which ones a restart cannot fix', () => {
    const cases: [string[], string, string][] = [
      [['ssh: Could not resolve hostname gw.example.org: Name or service not known'], 'UNREACHABLE', `${ctx.label}: cannot resolve the SSH server's name gw.example.org: Name or service not known`],
      [['ssh: connect to host gw.example.org port 22: Connection timed out'], 'UNREACHABLE', `${ctx.label}: cannot reach the SSH server gw.example.org port 22: Connection timed out`],
      [['ssh: connect to host gw.example.org port 22: No route to host'], 'UNREACHABLE', `${ctx.label}: cannot reach the SSH server gw.example.org port 22: No route to host`],
      [['Connection timed out during banner exchange', 'Connection to 198.51.100.6 port 22 timed out'], 'UNREACHABLE', `${ctx.label}: gw.example.org port 22 did not answer as an SSH server: Connection timed out during banner exchange`],
      [['kex_exchange_identification: read: Connection reset by peer'], 'UNREACHABLE', `${ctx.label}: gw.example.org port 22 did not answer as an SSH server: read: Connection reset by peer`],
      [['Timeout, server gw.example.org not responding.'], 'EXITED', `${ctx.label}: lost the SSH server: Timeout, server gw.example.org not responding`],
      [['Connection to gw.example.org closed by remote host.'], 'EXITED', `${ctx.label}: lost the SSH server: Connection to gw.example.org closed by remote host`],
      [['unix_listener: cannot bind to path /nonexistent/t1.sock: No such file or directory', 'Could not request local forwarding.'], 'FORWARD_FAILED', `${ctx.label}: could not open the local end of the forward: cannot bind to path /nonexistent/t1.sock: No such file or directory`],
      [['command-line: line 0: Bad configuration option: nosuchoption'], 'INVALID_CONFIG', `${ctx.label}: ssh rejected its options: Bad configuration option: nosuchoption`],
      [["Permissions 0644 for 'keys/id_ed25519' are too open.", 'This private key will be ignored.', 'phoenix@gw.example.org: Permission denied (publickey).'], 'INVALID_CONFIG', `${ctx.label}: ssh ignores identity file keys/id_ed25519 (--ssh-identity): its permissions 0644 are too open (chmod 600 it)`],
      [['Received disconnect from 198.51.100.6 port 22:2: Too many authentication failures'], 'AUTH_REFUSED', `${ctx.label}: the SSH server refused key keys/id_ed25519 (--ssh-identity) for user phoenix: Too many authentication failures`],
      [['No ED25519 host key is known for gw.example.org and you have requested strict checking.', 'Host key verification failed.'], 'HOST_KEY', `${ctx.label}: host key check failed against keys/known_hosts (--ssh-known-hosts): no host key for gw.example.org is recorded there and checking is strict`],
    ]
    for (const [lines, code, message] of cases) {
      const error = diagnose([...debug, ...lines], exited, ctx)
      expect({ code: error.code, message: error.message }).toEqual({ code, message })
      expect(error.message).not.toContain('\n')
    }
    expect([...FATAL_SSH_ERRORS].sort()).toEqual(['AUTH_REFUSED', 'CLOSED', 'FORWARD_FAILED', 'HOST_KEY', 'INVALID_CONFIG', 'LIMIT', 'NOT_INSTALLED'])
  })

  it('an unexplained death says how ssh ended and its last words, not its debug chatter', () => {
    expect(diagnose([...debug, 'debug1: channel 0: new port-listener'], { code: null, signal: 'SIGKILL' }, ctx).message).toBe(`${ctx.label}: ssh was killed by SIGKILL: debug1: channel 0: new port-listener`)
    expect(diagnose([...debug, 'something odd happened', 'debug1: Exit status 0', 'Transferred: sent 3468, received 3172 bytes, in 2.6 seconds'], { code: 3, signal: null }, ctx).message).toBe(`${ctx.label}: ssh exited with status 3: something odd happened`)
    expect(lastWords([])).toBe('(nothing)')
  })

  it('recognises a forward the server refused for one connection', () => {
    expect(forwardRefusal('channel 3: open failed: administratively prohibited: open failed')).toBe('administratively prohibited: open failed')
    expect(forwardRefusal('channel 1: open failed: connect failed: Connection refused')).toBe('connect failed: Connection refused')
    expect(forwardRefusal('debug1: channel 1: new direct-tcpip [direct-tcpip] (inactive timeout: 0)')).toBeUndefined()
  })
})
