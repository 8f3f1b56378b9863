/**
 * A key's owner cached by one server process lives `keyCacheMs` (the Postgres store's default is
 * 500 ms), so a permission change or deletion made through another server takes effect here within
 * that time. test/postgres/two-servers.test.ts shows it across two real servers; the lifetime is
 * pinned here, with the time the cache ages by driven by hand, not by the wall clock of a busy
 * machine.
 */
import { describe, expect, it } from 'vitest'
import { keyCache } from '../../adapters/postgres/key-cache.js'
import type { KeyOwner } from '../../src/store/contract.js'

const owner = (version: number): KeyOwner => ({
  kind: 'application',
  application: {
    id: 'app',
    tenant_id: 'T',
    name: `v${version}`,
    type: 'private',
    permissions: [],
    created_at: '2030-01-01T00:00:00.000Z',
    key_hash: 'hash',
  },
})

describe('the key cache ages entries by the time it is given', () => {
  it('an owner is answered from the cache for 500 ms, and read again after', async () => {
    let now = 0
    let version = 0
    const cache = keyCache(
      500,
      async () => owner(version),
      undefined,
      () => now,
    )
    expect(await cache.find('hash')).toMatchObject({ application: { name: 'v0' } })
    // Another process changes the application.
    version = 1
    now = 499
    expect(await cache.find('hash')).toMatchObject({ application: { name: 'v0' } })
    now = 500
    expect(await cache.find('hash')).toMatchObject({ application: { name: 'v1' } })
  })
})
