import { describe, expect, it } from 'vitest'
import type { Principal } from '../../src/applications/access.js'
import { ServiceError } from '../../src/kernel/errors.js'
import type { Json, StoredToken } from '../../src/kernel/types.js'
import {
  FAILS_ON_STORED_DATA,
  overStoredData,
  overStoredDataAsync,
  requireVisibilityKept,
  type VisibilityFields,
  withoutStoredValues,
} from '../../src/tokens/visibility.js'

/**
 * `src/tokens/visibility.ts` on its own: which writes need `token:read` with `reveal`, what a refusal
 * says, and what a failure over stored data keeps of its reason.
 */
const rule = (container: string, transform: 'reveal' | 'mask') => ({
  description: container,
  priority: 1,
  container,
  transform,
  permissions: ['token:read' as const, 'token:update' as const],
})
/** Reads `/open/` revealed and `/hidden/` masked. */
const revealer: Principal = {
  tenantId: 't',
  id: 'app-r',
  kind: 'application',
  type: 'private',
  permissions: ['token:read', 'token:update'],
  rules: [rule('/open/', 'reveal'), rule('/hidden/', 'mask')],
}
/** Reads everything masked. */
const masked: Principal = { ...revealer, id: 'app-m', rules: [rule('/', 'mask')] }

const token = (extra: Partial<StoredToken> = {}): StoredToken => ({
  id: 'tok',
  tenant_id: 't',
  type: 'token',
  data: { a: 1, b: 2 },
  containers: ['/open/'],
  metadata: {},
  created_by: 'app',
  created_at: '2030-01-01T00:00:00Z',
  ...extra,
})
const fieldsOf = (t: StoredToken): VisibilityFields => ({
  mask: t.mask,
  containers: t.containers,
  fingerprint_expression: t.fingerprint_expression,
  search_indexes: t.search_indexes,
})

/** The `forbidden` message `f` throws, or undefined when it throws nothing. */
function refusal(f: () => void): string | undefined {
  try {
    f()
  } catch (error) {
    expect(error).toBeInstanceOf(ServiceError)
    expect((error as ServiceError).code).toBe('forbidden')
    return (error as ServiceError).message
  }
  return undefined
}

const keep = (principal: Principal, current: StoredToken, next: Partial<VisibilityFields>, patch = {}) =>
  refusal(() => requireVisibilityKept(principal, current, { ...fieldsOf(current), ...next }, patch))

describe('requireVisibilityKept', () => {
  it('each changed field is named in the refusal, in order', () => {
    const t = token()
    const needs = 'needs token:read access with the reveal transform to token tok'
    expect(keep(masked, t, { mask: '{{ data.a }}' })).toBe(`changing mask ${needs}`)
    expect(keep(masked, t, { fingerprint_expression: '{{ data.a }}' })).toBe(
      `changing fingerprint_expression ${needs}`,
    )
    expect(keep(masked, t, { search_indexes: ['{{ data.a }}'] })).toBe(`changing search_indexes ${needs}`)
    expect(keep(masked, t, { containers: ['/other/'] })).toBe(`changing containers ${needs}`)
    expect(keep(masked, t, { mask: 'x', containers: ['/other/'] })).toBe(`changing mask, containers ${needs}`)
    // The same values need nothing, an absent search_indexes is the same as none.
    expect(keep(masked, t, {})).toBeUndefined()
    expect(keep(masked, token({ search_indexes: [] }), { search_indexes: undefined })).toBeUndefined()
  })

  it('a move needs reveal on the old containers and on the new ones', () => {
    expect(keep(revealer, token(), { containers: ['/open/elsewhere/'] })).toBeUndefined()
    expect(keep(revealer, token(), { containers: ['/hidden/'] })).toBe(
      'changing containers needs token:read access with the reveal transform to token tok',
    )
    expect(keep(revealer, token({ containers: ['/hidden/'] }), { containers: ['/open/'] })).toBeDefined()
    // A mask change where the caller reveals needs nothing more.
    expect(keep(revealer, token(), { mask: 'x' })).toBeUndefined()
  })

  it('merging object data needs reveal only where an expression could mix it with stored data', () => {
    const merge = 'merging data into token tok, whose mask, fingerprint expression or search indexes '
    const patch = { data: { a: 3 } }
    expect(keep(masked, token(), {}, patch)).toBeUndefined()
    expect(keep(masked, token({ fingerprint_expression: '{{ data.a }}' }), {}, patch)).toBe(
      `${merge}could combine it with the stored data, needs token:read access with the reveal transform ` +
        '(data that is not an object replaces the stored data whole, and needs none)',
    )
    expect(keep(masked, token({ search_indexes: ['{{ data.a }}'] }), {}, patch)).toMatch(/^merging data/)
    expect(keep(masked, token({ mask: '{{ data.b }}' }), {}, patch)).toMatch(/^merging data/)
    expect(keep(masked, token({ search_indexes: [] }), {}, patch)).toBeUndefined()
    expect(keep(revealer, token({ fingerprint_expression: '{{ data.a }}' }), {}, patch)).toBeUndefined()
  })

  it('data that is not an object (or no data, or stored data that is not one) replaces whole and needs nothing', () => {
    const mixing = token({ fingerprint_expression: '{{ data.a }}' })
    for (const data of [[1, 2], 'text', 7, null, true] as Json[]) {
      expect(keep(masked, mixing, {}, { data })).toBeUndefined()
    }
    expect(keep(masked, mixing, {}, {})).toBeUndefined()
    expect(keep(masked, { ...mixing, data: 'stored' }, {}, { data: { a: 1 } })).toBeUndefined()
    expect(keep(masked, { ...mixing, data: [1] }, {}, { data: { a: 1 } })).toBeUndefined()
  })

  it('metadata changes need reveal only when the fingerprint expression reads metadata', () => {
    const reads = token({ fingerprint_expression: '{{ data.a | slice: metadata.at, 1 }}' })
    expect(keep(masked, reads, {}, { metadata: { at: '1' } })).toBe(
      'changing the metadata of token tok, whose fingerprint expression reads it, needs token:read access with the reveal transform',
    )
    expect(keep(masked, reads, {}, {})).toBeUndefined()
    expect(keep(revealer, reads, {}, { metadata: { at: '1' } })).toBeUndefined()
    expect(
      keep(masked, token({ fingerprint_expression: '{{ data.a }}' }), {}, { metadata: {} }),
    ).toBeUndefined()
    expect(keep(masked, token(), {}, { metadata: { at: '1' } })).toBeUndefined()
  })
})

describe('withoutStoredValues', () => {
  const failure = (issues: Record<string, string[]>) =>
    new ServiceError('validation_failed', 'raw', { issues })

  it('keeps the fields and the messages that only name a limit; replaces the rest', () => {
    const safe = withoutStoredValues(
      failure({ mask: ['is longer than 10 characters', 'quotes "4111"'], search_indexes: ['bad [x]'] }),
    ) as ServiceError
    expect(safe.code).toBe('validation_failed')
    expect(safe.issues).toEqual({
      mask: ['is longer than 10 characters', FAILS_ON_STORED_DATA],
      search_indexes: [FAILS_ON_STORED_DATA],
    })
    expect(safe.message).toBe(
      `mask: is longer than 10 characters; ${FAILS_ON_STORED_DATA}; search_indexes: ${FAILS_ON_STORED_DATA}`,
    )
    const descriptor = Object.getOwnPropertyDescriptor(safe.issues, 'mask')
    expect(descriptor).toMatchObject({ enumerable: true, writable: true, configurable: true })
  })

  it('a field named __proto__ stays a plain field; no issues says only that it failed; other errors pass', () => {
    const issues = JSON.parse('{"__proto__": ["at most 3"]}') as Record<string, string[]>
    const safe = withoutStoredValues(failure(issues)) as ServiceError
    expect(Object.keys(safe.issues!)).toEqual(['__proto__'])
    expect(safe.message).toBe('__proto__: at most 3')
    expect((withoutStoredValues(failure({})) as ServiceError).message).toBe(FAILS_ON_STORED_DATA)
    const other = new ServiceError('forbidden', 'no "4111"')
    expect(withoutStoredValues(other)).toBe(other)
  })

  it('overStoredData and overStoredDataAsync answer or throw the cleaned failure', async () => {
    expect(overStoredData(() => 1)).toBe(1)
    expect(await overStoredDataAsync(async () => 2)).toBe(2)
    const quoting = failure({ data: ['"4111"'] })
    expect(() =>
      overStoredData(() => {
        throw quoting
      }),
    ).toThrow(`data: ${FAILS_ON_STORED_DATA}`)
    await expect(
      overStoredDataAsync(async () => {
        throw quoting
      }),
    ).rejects.toThrow(`data: ${FAILS_ON_STORED_DATA}`)
  })
})
