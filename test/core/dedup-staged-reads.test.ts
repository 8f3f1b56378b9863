/**
 * Deduplicating creates inside a transaction read its staged records once a request, not once a
 * token; and a request past the transaction's bound of writes is refused before any is read.
 */
import { expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { delegatingStore } from '../../src/store/delegate.js'
import { failure, setup } from './setup.js'

/** `n` token bodies of values `from`…, deduplicating when `dedup`. */
const bodies = (n: number, from: number, dedup: boolean) =>
  Object.fromEntries(
    Array.from({ length: n }, (_, i) => [
      `v${from + i}`,
      { type: 'token', data: `value ${from + i}`, deduplicate_token: dedup },
    ]),
  )

it('reads 600 staged records once for 50 deduplicating creates, and none for a request past 1000 writes', async () => {
  const base = memoryStore()
  let reads = 0
  const store = delegatingStore(base, {
    listStaged: (tenantId, transactionId, query) => {
      reads++
      return base.listStaged(tenantId, transactionId, query)
    },
  })
  const { client, service, full } = await setup({ store })
  const tx = await client.transactions.create()
  const inTx = service.connect(full.key, { transactionId: tx.id })
  for (let i = 0; i < 6; i++) await inTx.tokens.tokenize(bodies(100, i * 100, false))
  reads = 0
  // Half of them duplicate staged tokens, half are new.
  const answered = (await inTx.tokens.tokenize(bodies(50, 575, true))) as Record<string, { id: string }>
  expect(Object.keys(answered)).toHaveLength(50)
  // 600 records are two pages of 500: read once for the request, not once a token (100 reads).
  expect(reads).toBe(2)
  for (let i = 0; i < 3; i++) await inTx.tokens.tokenize(bodies(100, 1000 + i * 100, false))
  await inTx.tokens.tokenize(bodies(75, 1300, false))
  reads = 0
  const past = await failure(inTx.tokens.tokenize(bodies(100, 2000, true)))
  expect(past.code).toBe('validation_failed')
  expect(past.message).toContain('1000')
  expect(reads).toBe(0)
})
