import { expect, it } from 'vitest'
import type { StoredProxy } from '../../src/kernel/index.js'
import type { Store } from '../../src/store/index.js'
import { NOW, T, U } from './records.js'

/** A proxy of tenant `tenant` named `id`, created `at`. */
export function proxy(id: string, tenant = T, at = NOW): StoredProxy {
  return {
    id,
    tenant_id: tenant,
    name: `proxy ${id}`,
    destination_url: 'https://api.example.com/v1',
    configuration: {},
    require_auth: true,
    created_at: at,
    created_by: 'app-1',
  }
}

/**
 * Pre-configured proxies: every field kept as put (configuration, transforms, application), a put
 * replaces, a delete removes, tenants never see each other's, and a page is ordered by creation
 * then id with its total and its `ids` filter. Registered inside the store suite's `describe`.
 */
export function proxiesTests(fresh: () => Promise<Store>): void {
  const put = (store: Store, p: StoredProxy) => store.write({ ops: [{ op: 'proxy.put', proxy: p }] })

  it('keeps every field of a proxy as put, and a put replaces the whole proxy', async () => {
    const store = await fresh()
    const full: StoredProxy = {
      ...proxy('p1'),
      request_transform: { code: 'module.exports = async (req) => req.args' },
      response_transform: { code: 'module.exports = async (req) => ({ body: 1 })' },
      application_id: 'app-2',
      configuration: { SECRET: 'conformance-canary', OTHER: '' },
      require_auth: false,
      modified_at: '2030-01-02T00:00:00.000Z',
      modified_by: 'app-3',
    }
    expect((await put(store, full)).ok).toBe(true)
    expect(await store.getProxy(T, 'p1')).toEqual(full)
    const replaced = { ...proxy('p1'), name: 'renamed' }
    await put(store, replaced)
    expect(await store.getProxy(T, 'p1')).toEqual(replaced)
    await store.close()
  })

  it("never answers another tenant's proxy, and a delete removes only its own", async () => {
    const store = await fresh()
    await put(store, proxy('p1', T))
    await put(store, { ...proxy('p1', U), name: 'theirs' })
    expect((await store.getProxy(U, 'p1'))?.name).toBe('theirs')
    expect((await store.getProxy(T, 'p1'))?.name).toBe('proxy p1')
    await store.write({ ops: [{ op: 'proxy.delete', tenant_id: T, id: 'p1' }] })
    expect(await store.getProxy(T, 'p1')).toBeNull()
    expect((await store.getProxy(U, 'p1'))?.name).toBe('theirs')
    expect(await store.getProxy(T, 'missing')).toBeNull()
    expect((await store.listProxies(T, { offset: 0, limit: 10 })).total).toBe(0)
    await store.close()
  })

  it('lists a page in creation order (then id), with its total and the ids filter', async () => {
    const store = await fresh()
    const at = (n: number) => `2030-01-01T00:00:0${n}.000Z`
    await store.write({
      ops: [
        { op: 'proxy.put', proxy: proxy('c', T, at(1)) },
        { op: 'proxy.put', proxy: proxy('a', T, at(2)) },
        { op: 'proxy.put', proxy: proxy('b', T, at(1)) },
        { op: 'proxy.put', proxy: proxy('z', U, at(0)) },
      ],
    })
    const ids = async (query: { offset: number; limit: number; ids?: string[] }) => {
      const page = await store.listProxies(T, query)
      return { ids: page.items.map((p) => p.id), total: page.total }
    }
    expect(await ids({ offset: 0, limit: 10 })).toEqual({ ids: ['b', 'c', 'a'], total: 3 })
    expect(await ids({ offset: 1, limit: 1 })).toEqual({ ids: ['c'], total: 3 })
    expect(await ids({ offset: 0, limit: 10, ids: ['a', 'z', 'missing'] })).toEqual({ ids: ['a'], total: 1 })
    await store.close()
  })

  it('proxy.unchanged holds for the proxy as stored, and fails once it changed, for another tenant or an absent proxy', async () => {
    const store = await fresh()
    const stored = { ...proxy('p1'), configuration: { SECRET: 'a' } }
    await put(store, stored)
    await put(store, { ...stored, tenant_id: U, configuration: { SECRET: 'u' } })
    const reseal = (tenant: string, id: string, as: StoredProxy) =>
      store.write({
        checks: [{ check: 'proxy.unchanged', tenant_id: tenant, id, proxy: as }],
        ops: [{ op: 'proxy.put', proxy: { ...as, configuration: { SECRET: 'resealed' } } }],
      })
    const changed = { ...stored, configuration: { SECRET: 'changed' } }
    await put(store, changed)
    expect((await reseal(T, 'p1', stored)).ok).toBe(false)
    expect(await store.getProxy(T, 'p1')).toEqual(changed)
    expect((await reseal(T, 'p2', { ...stored, id: 'p2' })).ok).toBe(false)
    expect(await store.getProxy(T, 'p2')).toBeNull()
    expect((await reseal(U, 'p1', changed)).ok).toBe(false)
    expect((await reseal(T, 'p1', changed)).ok).toBe(true)
    expect((await store.getProxy(T, 'p1'))?.configuration).toEqual({ SECRET: 'resealed' })
    expect((await store.getProxy(U, 'p1'))?.configuration).toEqual({ SECRET: 'u' })
    await store.close()
  })
}
