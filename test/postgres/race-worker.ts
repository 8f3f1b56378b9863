/**
 * One racer of `race.test.ts`, in a process of its own with its own pool:
 *   node --import tsx test/postgres/race-worker.ts URL SCHEMA NAME
 * Prints `ready`, then for every round number read from stdin races to authorize the round's nonce
 * and to commit the round's transaction, and prints `{ round, nonce, commit }` (who won what).
 */
import { createInterface } from 'node:readline'
import pg from 'pg'
import { postgresStore } from '../../adapters/postgres/index.js'
import type { Op } from '../../src/store/index.js'
import { raceToken, T } from './race-records.js'

const [url, schema, name] = process.argv.slice(2) as [string, string, string]
const pool = new pg.Pool({ connectionString: url, max: 2 })
const store = await postgresStore({ pool, schema })
process.stdout.write('ready\n')

for await (const line of createInterface({ input: process.stdin })) {
  const round = Number(line)
  const now = '2030-01-01T00:00:00.000Z'
  const open = await store.getTransaction(T, `tx-${round}`)
  const staged = await store.listStaged(T, `tx-${round}`, { limit: 10 })
  const pending = await store.getSessionByNonce(T, `nonce-${round}`)
  // Like the core, authorize only a session read as pending and commit only a transaction read as
  // open, each guarded on the record being unchanged since.
  const [nonce, commit] = await Promise.all([
    pending?.state === 'created' && pending.expires_at > now
      ? store.write({
          checks: [{ check: 'session.unchanged', tenant_id: T, id: pending.id, session: pending }],
          ops: [{ op: 'session.put', session: { ...pending, state: 'authorized', authorized_by: name } }],
        })
      : { ok: false },
    open?.state === 'open' && open.expires_at > now
      ? store.write({
          checks: [{ check: 'transaction.unchanged', tenant_id: T, id: `tx-${round}`, transaction: open }],
          ops: [
            ...staged.flatMap((w): Op[] => (w.token ? [{ op: 'token.put', token: w.token }] : [])),
            { op: 'transaction.put', transaction: { ...open, state: 'committed' } },
            ...staged.map(
              (w): Op => ({
                op: 'staged.delete',
                tenant_id: T,
                transaction_id: w.transaction_id,
                token_id: w.token_id,
              }),
            ),
            { op: 'token.put', token: raceToken(`won-${round}`, name) },
          ],
        })
      : { ok: false },
  ])
  process.stdout.write(`${JSON.stringify({ round, nonce: nonce.ok, commit: commit.ok })}\n`)
}
await store.close()
await pool.end()
