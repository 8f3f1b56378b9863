import { afterEach, describe, expect, it, onTestFinished, vi } from 'vitest'
import { readError } from '../../adapters/file/faults.js'
import { fileStore } from '../../adapters/file/index.js'
import { createHttpHandler } from '../../adapters/http/index.js'
import { createService, manualClock } from '../../entry/index.js'
import { isStoreError } from '../../src/store/error.js'
import { REVEAL_ALL, tenantWithClient } from '../support/tenants.js'
import { NOW } from './fixtures.js'
import { tempDir } from './helpers.js'
import { opened } from './lmdb-opened.js'

/**
 * A read that LMDB fails (a full reader table, an I/O error, a damaged page, its panic) answers as
 * the store's failure, with its code: 503 with Retry-After for what passes, 500 only for damaged
 * files; before, every one was LMDB's own error, a 500 "internal" alike. The failures are LMDB's
 * own errors (an `Error` with its error number as `code`), thrown by the databases' read method.
 */

/** lmdb as it is, its `open` noting each environment it opened (`opened`). */
vi.mock('lmdb', async (original) => (await import('./lmdb-opened.js')).noting(await original()))

/** The read methods of lmdb's databases that the tests fail: every `get` goes through `getBinaryFast`. */
interface Reads {
  getBinaryFast(...args: unknown[]): unknown
  getRange(...args: unknown[]): unknown
}

/**
 * Makes `method` of the databases of the environment opened last (the store's: lmdb makes a class
 * per environment) throw `error`, every time or only the next time.
 */
function failing(method: keyof Reads, error: Error, once = false) {
  const proto = Object.getPrototypeOf(opened.at(-1)) as Reads
  expect(Object.hasOwn(proto, method)).toBe(true)
  const spy = vi.spyOn(proto, method)
  const fail = () => {
    throw error
  }
  return once ? spy.mockImplementationOnce(fail) : spy.mockImplementation(fail)
}

/** An error as lmdb throws one: its message and LMDB's error number as `code`. */
const lmdbError = (message: string, code: number) => Object.assign(new Error(message), { code })

afterEach(() => {
  vi.restoreAllMocks()
})

async function vault() {
  const path = await tempDir()
  const logs: string[] = []
  const store = await fileStore({ path, durability: 'none', log: (l) => logs.push(l) })
  const service = createService({
    store,
    clock: manualClock(NOW),
    masterKey: Buffer.alloc(32, 5),
    runner: null,
  })
  const handler = createHttpHandler(service)
  const { key } = await tenantWithClient(service, 'reads', [REVEAL_ALL])
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await handler(
      new Request(`http://vault${path}`, {
        method,
        headers: { 'BT-API-KEY': key, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
    )
    return { status: res.status, retryAfter: res.headers.get('retry-after'), text: await res.text() }
  }
  const created = await call('POST', '/tokens', { type: 'token', data: 'card-canary-4242' })
  expect(created.status).toBe(201)
  const id = (JSON.parse(created.text) as { id: string }).id
  onTestFinished(() => service.close?.())
  return { call, id, logs, store }
}

describe('file store: reads LMDB fails', () => {
  it('answers a full reader table 503 with Retry-After, names nothing it holds, and reads again once LMDB does', async () => {
    const { call, id } = await vault()
    const spy = failing(
      'getBinaryFast',
      lmdbError('MDB_READERS_FULL: Environment maxreaders limit reached', -30790),
    )
    const failed = await call('GET', `/tokens/${id}`)
    expect(spy).toHaveBeenCalled()
    expect(failed.status).toBe(503)
    expect(failed.retryAfter).toBe('1')
    expect(failed.text).not.toContain('card-canary')
    expect(failed.text).not.toContain(id)
    spy.mockRestore()
    const again = await call('GET', `/tokens/${id}`)
    expect(again.status).toBe(200)
    expect(JSON.parse(again.text).data).toBe('card-canary-4242')
  })

  it('answers 503 for a range read LMDB fails (a list), not 500', async () => {
    const { call } = await vault()
    const spy = failing('getRange', lmdbError('Input/output error', 5))
    const failed = await call('GET', '/tokens?size=5')
    expect(spy).toHaveBeenCalled()
    expect(failed.status).toBe(503)
    spy.mockRestore()
    expect((await call('GET', '/tokens?size=5')).status).toBe(200)
  })

  it('answers a damaged page as the store being corrupt (500, its own detail), not as an internal fault', async () => {
    const { call, id } = await vault()
    failing('getBinaryFast', lmdbError('MDB_PAGE_NOTFOUND: Requested page not found', -30797))
    const failed = await call('GET', `/tokens/${id}`)
    expect(failed.status).toBe(500)
    expect(failed.text).toContain('could not read back what it holds')
  })

  it("opens the environment again after LMDB's panic on a read, answering 503 meanwhile", async () => {
    const { call, id, logs } = await vault()
    const spy = failing(
      'getBinaryFast',
      lmdbError('MDB_PANIC: Update of meta page failed or environment had fatal error', -30795),
      true,
    )
    expect((await call('GET', `/tokens/${id}`)).status).toBe(503)
    spy.mockRestore()
    // The reopen runs by itself; each call meanwhile answers 503 (the store is reopening).
    let status = 503
    for (let i = 0; i < 1000 && status === 503; i++) {
      await new Promise((r) => setTimeout(r, 5))
      status = (await call('GET', `/tokens/${id}`)).status
    }
    expect(status).toBe(200)
    expect(logs.some((l) => /reopened/.test(l))).toBe(true)
  })

  it('leaves an error without an error number as it is (a fault of the code, not of the store)', () => {
    const bug = new TypeError('x is not a function')
    expect(readError(bug)).toBe(bug)
    const full = readError(lmdbError('MDB_READERS_FULL', -30790))
    expect(isStoreError(full, 'unavailable')).toBe(true)
    expect(isStoreError(readError(lmdbError('MDB_CORRUPTED', -30796)), 'corrupt')).toBe(true)
    expect(isStoreError(readError(lmdbError('MDB_PANIC', -30795)), 'unavailable')).toBe(true)
  })
})
