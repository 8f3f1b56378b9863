import { describe, expect, it } from 'vitest'
import { createHttpHandler, type HttpLogEvent } from '../../adapters/http/index.js'
import { STORE_ANSWERS } from '../../adapters/http/problem.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock, type Store, StoreError, type StoreErrorCode } from '../../entry/index.js'
import { ALL_TOKEN, REVEAL_ALL } from './setup.js'

const CODES = Object.keys(STORE_ANSWERS) as StoreErrorCode[]

/** A memory store whose token reads throw `failure` while it is set. */
function failingStore(): { store: Store; fail: (error: unknown) => void } {
  const inner = memoryStore()
  let failure: unknown = null
  const store: Store = {
    ...inner,
    getToken: async (t, id) => {
      if (failure !== null) throw failure
      return inner.getToken(t, id)
    },
  }
  return { store, fail: (error) => (failure = error) }
}

async function setup() {
  const { store, fail } = failingStore()
  const service = createService({ store, clock: manualClock('2030-01-01T00:00:00.000Z') })
  const events: HttpLogEvent[] = []
  const handler = createHttpHandler(service, { log: (e) => events.push(e) })
  const tenant = await service.admin.createTenant({ name: 'acme' })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'app',
    type: 'private',
    permissions: ALL_TOKEN,
    rules: REVEAL_ALL,
  })
  const get = () => handler(new Request('http://vault/tokens/t1', { headers: { 'SVC-API-KEY': key } }))
  return { fail, get, events }
}

describe('store errors over HTTP', () => {
  it('answers 503 with Retry-After while the store is unavailable, and recovers once it is back', async () => {
    const { fail, get, events } = await setup()
    fail(new StoreError('unavailable', 'connect ECONNREFUSED 10.1.2.3:5432 password=hunter2'))
    const down = await get()
    expect(down.status).toBe(503)
    expect(down.headers.get('retry-after')).toBe('1')
    expect(down.headers.get('content-type')).toBe('application/problem+json')
    const text = await down.text()
    expect(text).not.toMatch(/10\.1\.2\.3|hunter2|ECONNREFUSED/)
    expect(JSON.parse(text)).toMatchObject({ status: 503, title: 'Service Unavailable' })
    expect(events.some((e) => e.kind === 'error' && e.error instanceof StoreError)).toBe(true)
    fail(null)
    expect((await get()).status).toBe(404)
  })

  it('maps every store error code through one table, with the retry hint the store gives', async () => {
    const { fail, get } = await setup()
    for (const code of CODES) {
      fail(new StoreError(code, `secret detail of ${code} at /var/lib/vault`))
      const response = await get()
      const answer = STORE_ANSWERS[code]
      expect(response.status, code).toBe(answer.status)
      expect(response.headers.get('retry-after'), code).toBe(
        answer.retryAfter === undefined ? null : String(answer.retryAfter),
      )
      const body = await response.text()
      expect(body, code).not.toContain('/var/lib/vault')
      expect(JSON.parse(body).detail, code).toBe(answer.detail)
    }
    fail(new StoreError('unavailable', 'down', { retryAfter: 7.2 }))
    expect((await get()).headers.get('retry-after')).toBe('8')
    expect(STORE_ANSWERS.unavailable.status).toBe(503)
    expect(STORE_ANSWERS.closed.status).toBe(503)
  })

  it('still answers a bare 500 for an error that is not a store error', async () => {
    const { fail, get } = await setup()
    fail(new Error('boom at /var/lib/vault'))
    const response = await get()
    expect(response.status).toBe(500)
    expect(response.headers.get('retry-after')).toBeNull()
    expect(await response.text()).not.toContain('/var/lib/vault')
  })
})

describe('StoreError', () => {
  it('is thrown by a closed memory store with the code closed', async () => {
    const store = memoryStore()
    await store.close()
    const error = await store.getTenant('x').then(
      () => null,
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(StoreError)
    expect((error as StoreError).code).toBe('closed')
    expect((error as StoreError).name).toBe('StoreError')
  })
})
