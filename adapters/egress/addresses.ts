import { lookup } from 'node:dns/promises'
import { BlockList, isIP } from 'node:net'
import { EgressError } from '../../src/reactors/index.js'

/**
 * Which addresses egress may connect to: a host name is resolved once, every address it resolves to
 * is checked, and the connection is made to the checked address (a second resolution can't lead
 * elsewhere: no DNS rebinding). Loopback, private, link-local, shared, multicast and reserved
 * addresses are refused unless the listed origin names that address itself
 * (`http://127.0.0.1:8080`; `localhost` counts as loopback addresses only).
 */

/** A list of subnets, each `[network, prefix]`. */
function blockList(family: 'ipv4' | 'ipv6', subnets: readonly (readonly [string, number])[]): BlockList {
  const list = new BlockList()
  for (const [net, prefix] of subnets) list.addSubnet(net, prefix, family)
  return list
}

const SPECIAL_V4 = blockList('ipv4', [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
])
const SPECIAL_V6 = blockList('ipv6', [
  ['::', 96],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
])

/** Whether `address` (an IP address) is loopback, private, link-local or otherwise not a public unicast address. */
export function isSpecialAddress(address: string): boolean {
  const family = isIP(address)
  if (family === 4) return SPECIAL_V4.check(address, 'ipv4')
  if (family !== 6) return true
  // IPv4-mapped and -compatible forms (`::ffff:10.0.0.1`, `::ffff:a00:1`) are refused whatever they map to.
  if (/^(?:0*:)*:?(?:0*:)*ffff:/i.test(address) || /^::ffff:/i.test(address)) return true
  return SPECIAL_V6.check(address, 'ipv6')
}

const isLoopback = (address: string): boolean =>
  isIP(address) === 4 ? address.startsWith('127.') : /^(?:0*:)*:?0*1$/.test(address) || address === '::1'

/**
 * The address to connect to for `url`: resolved once, every address checked (a special address is
 * allowed only when the listed origin names it: an IP literal, or `localhost` for loopback).
 */
export async function checkedAddress(url: URL): Promise<{ address: string; family: number }> {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
  const literal = isIP(host)
  if (literal) return { address: host, family: literal }
  let addresses: { address: string; family: number }[]
  try {
    addresses = await lookup(host, { all: true, verbatim: true })
  } catch {
    throw new EgressError(`${url.origin}: the host name does not resolve`)
  }
  if (!addresses.length) throw new EgressError(`${url.origin}: the host name does not resolve`)
  for (const { address } of addresses) {
    const special = isSpecialAddress(address)
    if (!special) continue
    if (host === 'localhost' && isLoopback(address)) continue
    throw new EgressError(
      `${url.origin} resolves to a loopback, private or reserved address: refused (list the address itself to allow it)`,
    )
  }
  return addresses[0]!
}
