import { expect, it } from 'vitest'
import type { StoredClientKey } from '../../src/kernel/index.js'
import type { Store } from '../../src/store/index.js'
import { NOW, T, U } from './records.js'

/** A client key of tenant `tenant` named `id`, created `at`. */
export function clientKey(id: string, tenant = T, at = NOW): StoredClientKey {
  return {
    id,
    tenant_id: tenant,
    public_key: `public-${id}`,
    private_key: `private-${id}`,
    created_by: 'app-1',
    created_at: at,
    expires_at: '2031-01-01T00:00:00.000Z',
  }
}

/**
 * Client encryption keys: every field kept as put, a put replaces, a delete removes, tenants never
 * see each other's, a page is ordered by creation then id with its total, and the dump holds them.
 * Registered inside the store suite's `describe`.
 */
export function clientKeysTests(fresh: () => Promise<Store>): void {
  const put = (store: Store, key: StoredClientKey) => store.write({ ops: [{ op: 'client_key.put', key }] })

  it('keeps every field of a client key as put, a put replaces it, and the dump holds it', async () => {
    const store = await fresh()
    await put(store, clientKey('k1'))
    expect(await store.getClientKey(T, 'k1')).toEqual(clientKey('k1'))
    const replaced = { ...clientKey('k1'), expires_at: '2030-06-01T00:00:00.000Z' }
    await put(store, replaced)
    expect(await store.getClientKey(T, 'k1')).toEqual(replaced)
    expect((await store.dump()).client_keys).toEqual([replaced])
    await store.close()
  })

  it("never answers another tenant's client key, and a delete removes only its own", async () => {
    const store = await fresh()
    await put(store, clientKey('k1', T))
    await put(store, { ...clientKey('k1', U), public_key: 'theirs' })
    expect((await store.getClientKey(T, 'k1'))?.public_key).toBe('public-k1')
    await store.write({ ops: [{ op: 'client_key.delete', tenant_id: T, id: 'k1' }] })
    expect(await store.getClientKey(T, 'k1')).toBeNull()
    expect((await store.getClientKey(U, 'k1'))?.public_key).toBe('theirs')
    expect(await store.getClientKey(T, 'missing')).toBeNull()
    expect((await store.listClientKeys(T, { offset: 0, limit: 10 })).total).toBe(0)
    await store.close()
  })

  it('lists a page of client keys in creation order (then id), with its total', async () => {
    const store = await fresh()
    const at = (n: number) => `2030-01-01T00:00:0${n}.000Z`
    await store.write({
      ops: [
        { op: 'client_key.put', key: clientKey('c', T, at(1)) },
        { op: 'client_key.put', key: clientKey('a', T, at(2)) },
        { op: 'client_key.put', key: clientKey('b', T, at(1)) },
        { op: 'client_key.put', key: clientKey('z', U, at(0)) },
      ],
    })
    const ids = async (query: { offset: number; limit: number }) => {
      const page = await store.listClientKeys(T, query)
      return { ids: page.items.map((k) => k.id), total: page.total }
    }
    expect(await ids({ offset: 0, limit: 10 })).toEqual({ ids: ['b', 'c', 'a'], total: 3 })
    expect(await ids({ offset: 1, limit: 1 })).toEqual({ ids: ['c'], total: 3 })
    await store.close()
  })
}
