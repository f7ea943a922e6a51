import { describe, expect, it } from 'vitest'
import { advertisable, classifyAddress, classifyIp, dialRank, interfaceCidrs, orderForDialing, type LocalView } from '../src/address-classes.ts'
import { PhoenixTransportError } from '../src/errors.ts'

const ID = '12D3KooWQYhTNQdmr3ArTeUHRYzFg94BKyTkoWBDWez9kSCVe2Xo'
const tcp = (ip: string, port = 7000) => `/${ip.includes(':') ? 'ip6' : 'ip4'}/${ip}/tcp/${port}/p2p/${ID}`
const ssh = (ip: string) => `/ip4/${ip}/tcp/22/ssh/phoenix/ip4/127.0.0.1/tcp/7000/p2p/${ID}`

/** A dual-stacked node of site A: private 10.231.1.11/24, global 2001:db8:1::11/64, loopback. */
const dualStack: LocalView = {
  cidrs: ['127.0.0.1/8', '::1/128', '10.231.1.11/24', '2001:db8:1::11/64', 'fe80::1/64'],
  listening: [tcp('10.231.1.11'), tcp('2001:db8:1::11')],
  ssh: true,
}

describe('address classes', () => {
  it('classifies IP literals: RFC 1918 and 100.64/10 private, documentation prefixes public, ULA, link-local, loopback, unusable', () => {
    const table: [string, string][] = [
      ['127.0.0.1', 'loopback'], ['127.8.9.1', 'loopback'], ['::1', 'loopback'],
      ['10.1.2.3', 'private-ipv4'], ['172.16.0.1', 'private-ipv4'], ['172.31.255.255', 'private-ipv4'], ['192.168.7.1', 'private-ipv4'],
      ['100.64.0.1', 'private-ipv4'], ['100.127.255.254', 'private-ipv4'], ['::ffff:10.0.0.1', 'private-ipv4'],
      ['172.32.0.1', 'public-ipv4'], ['100.128.0.1', 'public-ipv4'], ['198.51.100.7', 'public-ipv4'], ['8.8.8.8', 'public-ipv4'],
      ['169.254.3.4', 'link-local'], ['fe80::1', 'link-local'], ['febf::1', 'link-local'],
      ['fd00:231:1::10', 'unique-local-ipv6'], ['fc00::1', 'unique-local-ipv6'],
      ['2001:db8::1', 'global-ipv6'], ['2a00:1450::1', 'global-ipv6'],
      ['0.0.0.0', 'unusable'], ['224.0.0.1', 'unusable'], ['255.255.255.255', 'unusable'], ['240.0.0.1', 'unusable'], ['::', 'unusable'], ['ff02::1', 'unusable'],
    ]
    expect(table.map(([ip]) => [ip, classifyIp(ip)])).toEqual(table)
  })

  it('judges an SSH address by its SSH server, not by the target behind it', () => {
    const a = classifyAddress(ssh('198.51.100.6'))
    expect(a).toMatchObject({ class: 'public-ipv4', host: '198.51.100.6', viaSsh: true, family: 4 })
    expect(classifyAddress('/dns4/gw.example.org/tcp/22')).toMatchObject({ class: 'dns', family: 4 })
    expect(classifyAddress('/dns/localhost/tcp/7000')).toMatchObject({ class: 'loopback' })
    expect(classifyAddress('/unix/%2Ftmp%2Fx.sock')).toMatchObject({ class: 'loopback' })
  })

  it('a malformed address is one clear line naming the field and the cause', () => {
    const error = (() => {
      try {
        classifyAddress('/ip4/10.0.0.300/tcp/1', 'hub')
      } catch (e) {
        return e
      }
    })()
    expect(error).toBeInstanceOf(PhoenixTransportError)
    expect((error as PhoenixTransportError).code).toBe('INVALID_INPUT')
    expect((error as Error).message).toMatch(/^hub "\/ip4\/10\.0\.0\.300\/tcp\/1" is not a multiaddr: /)
    expect((error as Error).message).not.toContain('\n')
    expect(() => classifyAddress('/memory/x', 'hub')).toThrow(/^hub "\/memory\/x": cannot tell where \/memory leads/)
  })

  it('orders a peer\'s addresses global IPv6, public IPv4, private; SSH after direct; never link-local, loopback or a foreign private prefix', () => {
    const peer = [
      tcp('fe80::2'),
      tcp('10.231.1.12'), // our subnet
      ssh('198.51.100.6'),
      tcp('10.231.2.12'), // another site's private subnet
      tcp('fd00:231:2::12'), // another site's ULA
      tcp('127.0.0.1'),
      tcp('198.51.100.6'),
      tcp('2001:db8:2::12'),
      'not a multiaddr',
    ]
    const { dial, skipped, rejected } = orderForDialing(peer, dualStack)
    expect(dial).toEqual([tcp('2001:db8:2::12'), tcp('198.51.100.6'), tcp('10.231.1.12'), ssh('198.51.100.6')])
    expect(skipped.sort()).toEqual([tcp('fe80::2'), tcp('10.231.2.12'), tcp('fd00:231:2::12'), tcp('127.0.0.1')].sort())
    expect(rejected).toHaveLength(1)
    expect(rejected[0]!.reason).toMatch(/is not a multiaddr/)
  })

  it('a private address in a configured site prefix is dialled; in no prefix of ours it is not', () => {
    expect(dialRank(tcp('10.9.0.1'), dualStack)).toBeUndefined()
    expect(dialRank(tcp('10.9.0.1'), { ...dualStack, sitePrefixes: ['10.0.0.0/8'] })).toBe(2)
    expect(dialRank(tcp('192.168.1.1'), { ...dualStack, sitePrefixes: ['10.0.0.0/8'] })).toBeUndefined()
    expect(() => dialRank(tcp('10.9.0.1'), { ...dualStack, sitePrefixes: ['10.0.0.0'] })).toThrow(/^site prefix "10\.0\.0\.0" is not a CIDR prefix/)
  })

  it('a host with no IPv4 dials no IPv4 address; one with no global IPv6 dials no global IPv6 address', () => {
    const ipv6Only: LocalView = { cidrs: ['::1/128', '2001:db8:3::10/64', 'fe80::3/64'], listening: [tcp('2001:db8:3::10')], ssh: false }
    expect(orderForDialing([tcp('198.51.100.6'), '/dns4/gw.example.org/tcp/7000', tcp('2001:db8:1::11'), '/dns6/gw.example.org/tcp/7000'], ipv6Only).dial).toEqual([
      tcp('2001:db8:1::11'),
      '/dns6/gw.example.org/tcp/7000',
    ])
    const privateIpv4Only: LocalView = { cidrs: ['127.0.0.1/8', '192.168.5.20/24'], listening: [tcp('192.168.5.20')], ssh: false }
    // Behind NAT: public IPv4 is reachable outbound, global IPv6 is not.
    expect(orderForDialing([tcp('2001:db8:1::11'), tcp('198.51.100.6'), tcp('192.168.5.21')], privateIpv4Only).dial).toEqual([tcp('198.51.100.6'), tcp('192.168.5.21')])
  })

  it('loopback is dialled only between nodes that listen on loopback alone (one host), never by a networked node', () => {
    const singleHost: LocalView = { cidrs: ['127.0.0.1/8', '10.0.0.5/24'], listening: [tcp('127.0.0.1', 42001)], ssh: false }
    expect(dialRank(tcp('127.0.0.1', 42002), singleHost)).toBe(3)
    expect(dialRank(tcp('127.0.0.1', 42002), dualStack)).toBeUndefined()
    expect(dialRank(tcp('::1', 42002), dualStack)).toBeUndefined()
  })

  it('SSH addresses are dialled only by a node that can run SSH', () => {
    expect(dialRank(ssh('198.51.100.6'), dualStack)).toBe(5)
    expect(dialRank(ssh('198.51.100.6'), { ...dualStack, ssh: false })).toBeUndefined()
    expect(dialRank(ssh('10.231.2.10'), dualStack)).toBeUndefined()
  })

  it('advertises best class first, never link-local, loopback only when there is nothing else', () => {
    const own = [tcp('127.0.0.1'), tcp('::1'), tcp('10.231.1.11'), tcp('fe80::1'), tcp('2001:db8:1::11'), ssh('198.51.100.6'), tcp('198.51.100.6')]
    expect(advertisable(own)).toEqual([tcp('2001:db8:1::11'), tcp('198.51.100.6'), tcp('10.231.1.11'), ssh('198.51.100.6')])
    expect(advertisable([tcp('127.0.0.1'), tcp('::1'), tcp('fe80::1')])).toEqual([tcp('127.0.0.1'), tcp('::1')])
  })

  it('reads interface CIDRs from os.networkInterfaces()', () => {
    const info = (address: string, cidr: string, family: 'IPv4' | 'IPv6') => ({ address, cidr, family, netmask: '', mac: '00:00:00:00:00:00', internal: false, scopeid: 0 })
    expect(interfaceCidrs({ lo: [info('127.0.0.1', '127.0.0.1/8', 'IPv4')], eth0: [info('10.231.1.11', '10.231.1.11/24', 'IPv4'), info('2001:db8:1::11', '2001:db8:1::11/64', 'IPv6')], down: undefined })).toEqual([
      '127.0.0.1/8',
      '10.231.1.11/24',
      '2001:db8:1::11/64',
    ])
  })
})
