/**
 * The per-request limits docs/limits.md states that no other test pinned at their boundary: each
 * passes at the number written there and is refused one past it with a 400 naming the field, and
 * the refused call stores nothing. The numbers are written out; no constant is imported.
 */
import { createTestVault } from 'tokenvault/testing'
import { afterAll, describe, expect, it } from 'vitest'
import type { ServiceError } from '../../entry/index.js'

const vault = await createTestVault()
afterAll(() => vault.close())
const client = vault.client()

/** The failure of `call`, which must fail. */
async function refusal(call: Promise<unknown>): Promise<ServiceError> {
  const outcome = await call.then(
    () => undefined,
    (error: ServiceError) => error,
  )
  if (!outcome) throw new Error('expected a refusal')
  return outcome
}

/** Refused with 400 (`validation_failed`) naming `field` with `message`, and nothing stored. */
async function refusedNamed(call: () => Promise<unknown>, field: string, message: string): Promise<void> {
  const before = (await client.tokens.list({ size: 100 })).pagination.total_items
  const error = await refusal(call())
  expect(error.code).toBe('validation_failed')
  expect(error.issues?.[field]?.join(' ')).toContain(message)
  expect((await client.tokens.list({ size: 100 })).pagination.total_items).toBe(before)
}

describe('expressions: one template, one string it makes, filters in a chain', () => {
  const mask = (length: number) => `{{ data }}${'x'.repeat(length - '{{ data }}'.length)}`

  it('a template of 4096 characters is taken; 4097 answer 400', async () => {
    await expect(client.tokens.create({ type: 'token', data: 'v', mask: mask(4096) })).resolves.toBeDefined()
    await refusedNamed(
      () => client.tokens.create({ type: 'token', data: 'v', mask: mask(4097) }),
      'mask',
      'at most 4096 characters',
    )
  })

  it('a string of 1 000 000 characters is made; 1 000 001 answer 400', async () => {
    const padded = (length: number) => `{{ data | pad_left: ${length}, 'z' }}`
    await expect(
      client.tokens.create({ type: 'token', data: 'v', mask: padded(1_000_000) }),
    ).resolves.toBeDefined()
    await refusedNamed(
      () => client.tokens.create({ type: 'token', data: 'v', mask: padded(1_000_001) }),
      'mask',
      '1000000',
    )
  })

  it('a chain of 50 filters is taken; 51 answer 400', async () => {
    const chain = (filters: number) => `{{ data${' | upcase'.repeat(filters)} }}`
    await expect(client.tokens.create({ type: 'token', data: 'v', mask: chain(50) })).resolves.toBeDefined()
    await refusedNamed(
      () => client.tokens.create({ type: 'token', data: 'v', mask: chain(51) }),
      'mask',
      'more than 50 filters',
    )
  })
})

describe('search indexes: 20 a token, 500 characters each', () => {
  const indexes = (count: number) => Array.from({ length: count }, (_, i) => `{{ data | append: '${i}' }}`)
  const long = (length: number) =>
    `{{ data | append: '${'y'.repeat(length - "{{ data | append: '' }}".length)}' }}`

  it('20 indexes are taken; 21 answer 400', async () => {
    await expect(
      client.tokens.create({ type: 'token', data: 'v', search_indexes: indexes(20) }),
    ).resolves.toBeDefined()
    await refusedNamed(
      () => client.tokens.create({ type: 'token', data: 'v', search_indexes: indexes(21) }),
      'search_indexes',
      'at most 20',
    )
  })

  it('an index of 500 characters is taken; 501 answer 400', async () => {
    expect(long(500)).toHaveLength(500)
    await expect(
      client.tokens.create({ type: 'token', data: 'v', search_indexes: [long(500)] }),
    ).resolves.toBeDefined()
    await refusedNamed(
      () => client.tokens.create({ type: 'token', data: 'v', search_indexes: [long(501)] }),
      'search_indexes.0',
      'at most 500 characters',
    )
  })
})

describe('tokenize: 8 levels of nesting', () => {
  const nested = (levels: number): unknown => (levels === 0 ? 'x' : { a: nested(levels - 1) })

  it('a body nested 8 levels is tokenized; 9 answer 400 naming the path', async () => {
    await expect(client.tokens.tokenize(nested(8) as never)).resolves.toBeDefined()
    await refusedNamed(
      () => client.tokens.tokenize(nested(9) as never),
      'a.a.a.a.a.a.a.a.a',
      'deeper than 8 levels',
    )
  })
})
