import { describe, expect, it } from 'vitest'
import type { Store } from '../../src/store/index.js'
import { clientKeysTests } from './client-keys.js'
import { costTests } from './cost.js'
import { countsTests } from './counts.js'
import { documentsTests } from './documents.js'
import { expiryTests } from './expiry.js'
import { formulasTests } from './formulas.js'
import { guardTests } from './guards.js'
import { idempotencyTests } from './idempotency.js'
import { keysTests } from './keys.js'
import { logsTests } from './logs.js'
import { proxiesTests } from './proxies.js'
import { readsTests } from './reads.js'
import { link, lock, NOW, put, session, stage, T, token, tx } from './records.js'
import { serviceTests } from './service.js'
import { sessionsTests } from './sessions.js'
import { tenantKeysTests } from './tenant-keys.js'
import { tokenIntentsTests } from './token-intents.js'
import { tokensTests } from './tokens.js'
import { transactionsTests } from './transactions.js'
import { webhooksTests } from './webhooks.js'

/** How a suite run gets a fresh store, and how it disposes of it. */
export interface StoreHarness {
  name: string
  /** A new, empty store, isolated from every other test's. */
  open(): Promise<Store>
  /** Closes and reopens the same store (persistent adapters only): what it acknowledged must still be there. */
  reopen?(store: Store): Promise<Store>
}

/** The one suite every Store adapter must pass, unchanged. */
export function storeContract(harness: StoreHarness): void {
  const fresh = async () => harness.open()

  describe(`Store contract: ${harness.name}`, () => {
    keysTests(fresh)
    tokensTests(fresh)
    readsTests(fresh)
    transactionsTests(fresh)
    sessionsTests(fresh)
    tenantKeysTests(fresh)
    formulasTests(fresh)
    guardTests(fresh)
    expiryTests(fresh)
    serviceTests(fresh)
    costTests(fresh)
    idempotencyTests(fresh)
    logsTests(fresh)
    webhooksTests(fresh)
    proxiesTests(fresh)
    tokenIntentsTests(fresh)
    clientKeysTests(fresh)
    documentsTests(fresh)
    countsTests(fresh, harness.reopen)

    it('answers null, never throws, for a read by an id longer than any key a store keeps (4 100 characters)', async () => {
      const store = await fresh()
      const id = 'i'.repeat(4100)
      expect(await store.getToken(T, id)).toBeNull()
      expect(await store.getProxy(T, id)).toBeNull()
      expect(await store.getWebhook(T, id)).toBeNull()
      expect(await store.getOutbox(T, id)).toBeNull()
      expect(await store.getTokenIntent(T, id)).toBeNull()
      expect(await store.getClientKey(T, id)).toBeNull()
      expect(await store.getDocument(T, id)).toBeNull()
    })

    if (harness.reopen) {
      const reopen = harness.reopen
      it('keeps every acknowledged write across a reopen', async () => {
        const store = await fresh()
        await store.write({ ops: [put(token('p')), put(token('c')), link('p', 'c')] })
        await store.write({ ops: [{ op: 'session.put', session: session('s1') }] })
        await store.write({ ops: [{ op: 'transaction.put', transaction: tx('t1') }] })
        await store.write({
          ops: [
            { op: 'transaction.put', transaction: tx('t1', { version: 1 }) },
            lock('x', 't1'),
            stage('t1', 'x', token('x')),
          ],
        })
        await store.write({ ops: [{ op: 'token.delete', tenant_id: T, id: 'c' }] })
        const before = await store.dump()
        const again = await reopen(store)
        expect(await again.dump()).toEqual(before)
        expect((await again.findKey('key-s1'))?.kind).toBe('session')
        const locked = await again.write({
          checks: [{ check: 'token.unlocked', tenant_id: T, id: 'x', now: NOW }],
          ops: [],
        })
        expect(locked.ok).toBe(false)
        await again.close()
      })
    }
  })
}
