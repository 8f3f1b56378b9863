import { expect } from 'vitest'
import { sweepExpired } from '../../src/lifecycle/index.js'
import type { RecordKey, Store } from '../../src/store/index.js'
import { IDEMPOTENCY_IDS, KEY_HASHES, NONCES, type Step, TENANTS, TIMES, TOKEN_IDS } from './arbitraries.js'
import { ContractModel } from './model.js'

export type { Step }

/** Every read of a store over the test universe (see `arbitraries.ts`), as one comparable value. */
export async function observe(store: Store, filters: string[] = []) {
  const seen: Record<string, unknown> = { dump: await store.dump() }
  for (const hash of KEY_HASHES) seen[`key ${hash}`] = await store.findKey(hash)
  for (const t of TENANTS) {
    for (const nonce of NONCES) seen[`nonce ${t} ${nonce}`] = await store.getSessionByNonce(t, nonce)
    for (const parent of TOKEN_IDS) {
      for (const now of TIMES) {
        seen[`children ${t} ${parent} ${now}`] = await store.listChildren(t, parent, {
          offset: 0,
          limit: 10,
          now,
        })
      }
      seen[`page ${t} ${parent}`] = await store.listChildren(t, parent, {
        offset: 1,
        limit: 1,
        now: TIMES[0]!,
        ids: ['a', 'c'],
        types: ['x'],
      })
      seen[`unlocked ${t} ${parent}`] = await store.write({
        checks: [{ check: 'token.unlocked', tenant_id: t, id: parent, now: TIMES[0]! }],
        ops: [],
      })
      for (const transaction_id of ['t1', 't2']) {
        seen[`held ${t} ${parent} ${transaction_id}`] = await store.write({
          checks: [{ check: 'lock.held', tenant_id: t, token_id: parent, transaction_id }],
          ops: [],
        })
      }
    }
    for (const name of [undefined, ...filters]) {
      const query = { offset: 0, limit: 10, ...(name === undefined ? {} : { name }) }
      seen[`formulas ${t} ${name}`] = await store.listFormulas(t, query)
    }
    seen[`formulas page ${t}`] = await store.listFormulas(t, { offset: 1, limit: 2 })
    seen[`formula ${t}`] = await store.getFormula(t, 'f1')
    seen[`apps ${t}`] = await store.listApplications(t, { offset: 0, limit: 10 })
    seen[`reactors ${t}`] = await store.listReactors(t, { offset: 1, limit: 10 })
    for (const name of filters) {
      seen[`reactors ${t} ${name}`] = await store.listReactors(t, { offset: 0, limit: 10, name })
    }
    seen[`reactors ids ${t}`] = await store.listReactors(t, { offset: 0, limit: 10, ids: ['r3', 'r1'] })
    for (const id of IDEMPOTENCY_IDS) seen[`idempotency ${t} ${id}`] = await store.getIdempotency(t, id)
    seen[`counts ${t}`] = [
      await store.countRecords(t, 'idempotency'),
      await store.countRecords(t, 'session.created'),
    ]
    for (const now of TIMES)
      seen[`tokens ${t} ${now}`] = await store.listTokens(t, { offset: 0, limit: 3, now })
    for (const transactionId of ['t1', 't2']) {
      seen[`staged ${t} ${transactionId}`] = await store.listStaged(t, transactionId, { limit: 10 })
      seen[`staged page ${t} ${transactionId}`] = await store.listStaged(t, transactionId, {
        after: TOKEN_IDS[0]!,
        limit: 1,
      })
      seen[`staged get ${t} ${transactionId}`] = await store.getStaged(
        t,
        transactionId,
        [...TOKEN_IDS].reverse(),
      )
    }
  }
  seen['official'] = await store.getFormula(null, 'f1')
  return seen
}

/**
 * Applies `steps` to `store` and to `reference` (by default a fresh `ContractModel`, the plain model
 * of the store contract), expecting the same result from each step, then the same answer to every
 * read in `observe`. With `reopen`, the store is closed and opened again after every `reopenEvery`
 * steps (durable stores: what it acknowledged must answer the same afterwards). Answers the store
 * it ends with (the caller closes it).
 */
export async function expectSameAsModel(
  store: Store,
  steps: Step[],
  filters: string[] = [],
  reopen?: (store: Store) => Promise<Store>,
  reopenEvery = 4,
  reference: Store = new ContractModel(),
): Promise<Store> {
  const keys = (list: RecordKey[]) => list.map((k) => `${k.tenant_id}/${k.id}`).sort()
  const ttl = { transactionTtlMs: 3_600_000 }
  let current = store
  for (const [i, s] of steps.entries()) {
    if ('purge' in s) {
      for (const kind of [
        'token',
        'token.cvc',
        'session',
        'application',
        'transaction.open',
        'transaction.ended',
        'idempotency',
      ] as const) {
        const query = { kind, before: s.purge, limit: 1000 }
        expect(keys(await current.listExpired(query))).toEqual(keys(await reference.listExpired(query)))
      }
      expect(await sweepExpired(current, s.purge, ttl)).toEqual(await sweepExpired(reference, s.purge, ttl))
    } else {
      expect(await current.write(structuredClone(s.batch))).toEqual(
        await reference.write(structuredClone(s.batch)),
      )
    }
    if (reopen && (i + 1) % reopenEvery === 0) current = await reopen(current)
  }
  expect(await observe(current, filters)).toEqual(await observe(reference, filters))
  return current
}
