import { beforeEach, describe, expect, it, vi } from 'vitest'
import { checkedAddress, isSpecialAddress } from '../../adapters/egress/addresses.js'
import { EgressError } from '../../src/reactors/egress.js'

/**
 * The node egress client's address checks (`adapters/egress/addresses.ts`) on their own, with name
 * resolution scripted (no network, no real DNS): every address a name resolves to is checked, a
 * special address (loopback, private, link-local, shared, reserved, IPv4-mapped IPv6) is refused
 * unless the origin names it, `localhost` reaches loopback only, and the address connected to is
 * the one checked. The scripted resolver answers as `dns.promises.lookup` does: every address only
 * with `all`, in the resolver's order only with `verbatim` (else IPv4 first).
 */

type Answer = { address: string; family: number }
const answers = new Map<string, Answer[]>()
const lookups: { host: string; options: unknown }[] = []
vi.mock('node:dns/promises', async (original) => {
  const real = await original<typeof import('node:dns/promises')>()
  return {
    ...real,
    lookup: async (host: string, options: { all?: boolean; verbatim?: boolean } = {}) => {
      lookups.push({ host, options })
      const fixed = answers.get(host)
      if (!fixed) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' })
      const ordered = options.verbatim === true ? fixed : [...fixed].sort((a, b) => a.family - b.family)
      return options.all === true ? ordered : ordered[0]
    },
  }
})

beforeEach(() => {
  answers.clear()
  lookups.length = 0
})

const v4 = (address: string): Answer => ({ address, family: 4 })
const v6 = (address: string): Answer => ({ address, family: 6 })

async function refusal(url: string): Promise<string> {
  const error = await checkedAddress(new URL(url)).then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(EgressError)
  return (error as Error).message
}

const special = (origin: string) =>
  `${origin} resolves to a loopback, private or reserved address: refused (list the address itself to allow it)`

describe('isSpecialAddress', () => {
  it('refuses every IPv4 range that is not public unicast, at both ends', () => {
    for (const address of [
      '0.0.0.0',
      '0.255.255.255',
      '10.0.0.0',
      '10.255.255.255',
      '100.64.0.0',
      '100.127.255.255',
      '127.0.0.1',
      '127.255.255.254',
      '169.254.0.1',
      '169.254.169.254',
      '172.16.0.1',
      '172.31.255.255',
      '192.0.0.8',
      '192.0.2.1',
      '192.88.99.1',
      '192.168.0.1',
      '192.168.255.255',
      '198.18.0.1',
      '198.19.255.255',
      '198.51.100.7',
      '203.0.113.9',
      '224.0.0.1',
      '239.255.255.255',
      '240.0.0.1',
      '255.255.255.255',
    ])
      expect({ address, special: isSpecialAddress(address) }).toEqual({ address, special: true })
    for (const address of [
      '1.1.1.1',
      '8.8.8.8',
      '9.255.255.255',
      '11.0.0.0',
      '100.63.255.255',
      '100.128.0.0',
      '126.255.255.255',
      '128.0.0.1',
      '169.253.255.255',
      '172.15.255.255',
      '172.32.0.0',
      '192.0.1.1',
      '192.88.98.1',
      '192.167.255.255',
      '192.169.0.0',
      '198.17.255.255',
      '198.20.0.0',
      '203.0.114.1',
      '223.255.255.255',
    ])
      expect({ address, special: isSpecialAddress(address) }).toEqual({ address, special: false })
  })

  it('refuses every IPv6 range that is not public unicast, and every IPv4-mapped form whatever it maps to', () => {
    for (const address of [
      '::',
      '::1',
      '::a00:1',
      '64:ff9b::808:808',
      '64:ff9b:1::1',
      '100::1',
      '2001::1',
      '2001:1ff:ffff::1',
      '2001:db8::1',
      '2002::1',
      'fc00::1',
      'fd12:3456::1',
      'fe80::1',
      'febf::1',
      'fec0::1',
      'ff02::1',
      '::ffff:8.8.8.8',
      '::FFFF:8.8.8.8',
      '::ffff:a00:1',
      '::ffff:808:808',
      '0:0:0:0:0:ffff:808:808',
      '0000:0000:0000:0000:0000:FFFF:0808:0808',
      '0::ffff:808:808',
      '::0:ffff:808:808',
    ])
      expect({ address, special: isSpecialAddress(address) }).toEqual({ address, special: true })
    for (const address of [
      '2606:4700:4700::1111',
      '2a00:1450:4001::200e',
      '2606:4700::ffff:1',
      '2001:200::1',
      '2003::1',
      'fbff::1',
      '64:ff9a::1',
      '1::ffff:808:808',
    ])
      expect({ address, special: isSpecialAddress(address) }).toEqual({ address, special: false })
  })

  it('counts anything that is not an IP address as special', () => {
    for (const text of ['', 'localhost', 'example.com', '1.2.3', '[::1]', '::g'])
      expect({ text, special: isSpecialAddress(text) }).toEqual({ text, special: true })
  })
})

describe('checkedAddress', () => {
  it('answers an IP literal itself, special or not, without resolving', async () => {
    expect(await checkedAddress(new URL('http://127.0.0.1:8080/x'))).toEqual({
      address: '127.0.0.1',
      family: 4,
    })
    expect(await checkedAddress(new URL('http://[::1]:8080/x'))).toEqual({ address: '::1', family: 6 })
    expect(await checkedAddress(new URL('https://[2606:4700::1111]/'))).toEqual({
      address: '2606:4700::1111',
      family: 6,
    })
    expect(await checkedAddress(new URL('https://8.8.8.8/'))).toEqual({ address: '8.8.8.8', family: 4 })
    expect(lookups).toEqual([])
  })

  it('resolves a name once, asking for every address in the resolver order, and answers the first', async () => {
    answers.set('api.test', [v6('2606:4700::1111'), v4('1.1.1.1'), v4('8.8.8.8')])
    expect(await checkedAddress(new URL('https://api.test/x'))).toEqual(v6('2606:4700::1111'))
    expect(lookups).toEqual([{ host: 'api.test', options: { all: true, verbatim: true } }])
  })

  it('refuses a name that does not resolve, or resolves to nothing', async () => {
    expect(await refusal('https://nowhere.test:8443/')).toBe(
      'https://nowhere.test:8443: the host name does not resolve',
    )
    answers.set('empty.test', [])
    expect(await refusal('https://empty.test/')).toBe('https://empty.test: the host name does not resolve')
  })

  it('refuses a name when any of its addresses is special, first or last', async () => {
    for (const addresses of [
      [v4('127.0.0.1')],
      [v4('10.1.2.3')],
      [v4('169.254.169.254')],
      [v6('::1')],
      [v6('::ffff:127.0.0.1')],
      [v6('fd00::1')],
      [v4('8.8.8.8'), v4('192.168.1.1')],
      [v4('192.168.1.1'), v4('8.8.8.8')],
      [v4('8.8.8.8'), v4('1.1.1.1'), v6('fe80::1')],
    ]) {
      answers.set('rebind.test', addresses)
      expect({ addresses, message: await refusal('http://rebind.test:81/') }).toEqual({
        addresses,
        message: special('http://rebind.test:81'),
      })
    }
  })

  it('lets localhost resolve to loopback addresses only', async () => {
    for (const address of [
      v4('127.0.0.1'),
      v4('127.1.2.3'),
      v6('::1'),
      v6('0:0:0:0:0:0:0:1'),
      v6('0000::0001'),
    ]) {
      answers.set('localhost', [address])
      expect(await checkedAddress(new URL('http://localhost:8080/'))).toEqual(address)
    }
    answers.set('localhost', [v4('127.0.0.1'), v6('::1')])
    expect(await checkedAddress(new URL('http://localhost:8080/'))).toEqual(v4('127.0.0.1'))
    for (const address of [
      v4('10.0.0.7'),
      v4('0.0.0.0'),
      v4('192.168.0.127'),
      v6('fd00::1'),
      v6('fe80::1'),
      v6('::'),
      v6('::2'),
      v6('::11'),
      v6('::ffff:127.0.0.1'),
    ]) {
      answers.set('localhost', [v4('127.0.0.1'), address])
      expect({ address, message: await refusal('http://localhost:8080/') }).toEqual({
        address,
        message: special('http://localhost:8080'),
      })
    }
    // Another name resolving to loopback is still refused.
    answers.set('local.test', [v4('127.0.0.1')])
    expect(await refusal('http://local.test/')).toBe(special('http://local.test'))
  })
})
