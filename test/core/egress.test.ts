/**
 * The host's egress checks (src/reactors/egress.ts, adapters/egress), made in-process with name resolution stubbed: a listed
 * host name that resolves to a loopback or private address is refused (DNS rebinding), the address
 * checked is the one connected to, and special addresses are classified.
 */
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { egressFetch, isSpecialAddress } from '../../adapters/egress/index.js'
import { EgressError, parseEgressOrigins } from '../../src/reactors/egress.js'

const answers = new Map<string, { address: string; family: number }[]>()
const lookups: string[] = []
vi.mock('node:dns/promises', async (original) => {
  const real = await original<typeof import('node:dns/promises')>()
  return {
    ...real,
    lookup: async (host: string, options: unknown) => {
      lookups.push(host)
      const fixed = answers.get(host)
      if (fixed) return fixed
      return real.lookup(host, options as never)
    },
  }
})

const server = createServer((req, res) => res.end(`hello from ${req.headers.host}`))
let port = 0
beforeAll(async () => {
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  port = (server.address() as AddressInfo).port
})
afterAll(() => server.close())

const limits = { timeoutMs: 2000, maxRequestBytes: 1024, maxResponseBytes: 1024 }

describe('egress checks', () => {
  it('a listed name resolving to loopback or a private address is refused; listed by address it is reached', async () => {
    for (const address of [
      '127.0.0.1',
      '10.1.2.3',
      '169.254.169.254',
      '::1',
      '::ffff:127.0.0.1',
      'fd00::1',
    ]) {
      answers.set('rebind.test', [{ address, family: address.includes(':') ? 6 : 4 }])
      const origin = `http://rebind.test:${port}`
      const error = await egressFetch(
        parseEgressOrigins([origin]),
        { url: `${origin}/`, method: 'GET', headers: {} },
        limits,
      ).catch((e: unknown) => e)
      expect({ address, error }).toEqual({ address, error: expect.any(EgressError) })
      expect((error as Error).message).toContain('resolves to a loopback, private or reserved address')
    }
    // One public and one private answer: refused too (every address is checked).
    answers.set('mixed.test', [
      { address: '93.184.216.34', family: 4 },
      { address: '127.0.0.1', family: 4 },
    ])
    const mixed = `http://mixed.test:${port}`
    await expect(egressFetch([mixed], { url: mixed, method: 'GET', headers: {} }, limits)).rejects.toThrow(
      /resolves to a loopback/,
    )
    const direct = `http://127.0.0.1:${port}`
    const ok = await egressFetch([direct], { url: `${direct}/`, method: 'GET', headers: {} }, limits)
    expect({ status: ok.status, body: ok.body }).toEqual({
      status: 200,
      body: `hello from 127.0.0.1:${port}`,
    })
  })

  it('a listed localhost origin reaches loopback only, resolved once, under its own Host header', async () => {
    const origin = `http://localhost:${port}`
    answers.set('localhost', [{ address: '10.0.0.7', family: 4 }])
    await expect(egressFetch([origin], { url: origin, method: 'GET', headers: {} }, limits)).rejects.toThrow(
      /resolves to a loopback/,
    )
    answers.set('localhost', [{ address: '127.0.0.1', family: 4 }])
    lookups.length = 0
    const ok = await egressFetch([origin], { url: `${origin}/`, method: 'GET', headers: {} }, limits)
    expect({ body: ok.body, lookups }).toEqual({
      body: `hello from localhost:${port}`,
      lookups: ['localhost'],
    })
    answers.delete('localhost')
  })

  it('classifies special addresses', () => {
    for (const address of [
      '127.0.0.1',
      '10.0.0.1',
      '172.16.5.4',
      '192.168.1.1',
      '169.254.1.1',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '::1',
      '::',
      'fe80::1',
      'fc00::1',
      '::ffff:10.0.0.1',
      '64:ff9b::a00:1',
      'not an ip',
    ])
      expect({ address, special: isSpecialAddress(address) }).toEqual({ address, special: true })
    for (const address of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111'])
      expect({ address, special: isSpecialAddress(address) }).toEqual({ address, special: false })
  })

  it('parses the allow-list to origins', () => {
    expect(
      parseEgressOrigins([
        'https://API.example.com:443',
        'http://127.0.0.1:8080/',
        'https://api.example.com',
      ]),
    ).toEqual(['https://api.example.com', 'http://127.0.0.1:8080'])
    expect(parseEgressOrigins(undefined)).toEqual([])
  })
})
