import { describe, expect, it } from 'vitest'
import type { StoredToken } from '../../src/kernel/index.js'
import { tokenHead, withTokenFields } from '../../src/kernel/index.js'
import { copiedToken } from '../../src/store/json.js'

/** A stored token with every field set, each to a value of its own. */
const full: Required<StoredToken> = {
  id: 'id-1',
  tenant_id: 'tenant-1',
  type: 'card',
  data: { number: '4242424242424242' },
  containers: ['/pci/high/'],
  metadata: { owner: 'ann' },
  mask: { number: '{{ data.number | reveal_last: 4 }}' },
  fingerprint: 'fp',
  fingerprint_expression: '{{ data.number }}',
  expires_at: '2031-01-01T00:00:00.000Z',
  search_indexes: ['{{ data.number }}'],
  created_by: 'app-1',
  created_at: '2030-01-01T00:00:00.000Z',
  modified_by: 'app-2',
  modified_at: '2030-02-01T00:00:00.000Z',
  _extras: { deduplicated: true },
  search_index_values: ['4242424242424242'],
  search_index_hashes: ['h'],
  cvc_expires_at: '2030-01-01T01:00:00.000Z',
}

/** The fields every stored token has. */
const pickRequired = (t: StoredToken) => ({
  id: t.id,
  tenant_id: t.tenant_id,
  type: t.type,
  data: t.data,
  containers: t.containers,
  metadata: t.metadata,
  created_by: t.created_by,
  created_at: t.created_at,
})

describe('withTokenFields', () => {
  it('keeps every field of a stored token, in a new record', () => {
    const copy = withTokenFields(full, {})
    expect(copy).toStrictEqual(full)
    expect(copy).not.toBe(full)
  })

  it('sets the fields given and drops those given as undefined, leaving the token as it was', () => {
    const before = structuredClone(full)
    const changed = withTokenFields(full, { data: 'x', mask: undefined, fingerprint: 'fp-2' })
    const { mask: _mask, ...unmasked } = before
    expect(changed).toStrictEqual({ ...unmasked, data: 'x', fingerprint: 'fp-2' })
    expect(Object.keys(changed)).not.toContain('mask')
    expect(full).toStrictEqual(before)
  })

  it('sets every field of a stored token, and drops every field it may lack', () => {
    const bare: StoredToken = {
      id: 'id-0',
      tenant_id: 'tenant-0',
      type: 'token',
      data: null,
      containers: [],
      metadata: {},
      created_by: 'app-0',
      created_at: '2029-01-01T00:00:00.000Z',
    }
    expect(withTokenFields(bare, full)).toStrictEqual(full)
    const dropped = withTokenFields(full, {
      mask: undefined,
      fingerprint: undefined,
      fingerprint_expression: undefined,
      expires_at: undefined,
      search_indexes: undefined,
      modified_by: undefined,
      modified_at: undefined,
      _extras: undefined,
      search_index_values: undefined,
      search_index_hashes: undefined,
      cvc_expires_at: undefined,
    })
    expect(dropped).toStrictEqual(pickRequired(full))
    expect(Object.keys(dropped)).toHaveLength(8)
  })

  it('a head is every field but data and mask', () => {
    const { data: _data, mask: _mask, ...head } = full
    expect(tokenHead(full)).toStrictEqual(head)
  })
})

describe('copiedToken', () => {
  it('copies every field, sharing no object or array with the token', () => {
    const before = structuredClone(full)
    const copied = copiedToken(full)
    expect(copied).toStrictEqual(full)
    const shared = (Object.keys(full) as Array<keyof StoredToken>).filter(
      (key) => typeof full[key] === 'object' && copied[key] === full[key],
    )
    expect(shared).toEqual([])
    ;(copied.data as { number: string }).number = 'changed'
    copied.containers.push('/x/')
    copied.metadata['owner'] = 'eve'
    copied.search_index_hashes!.push('h2')
    ;(copied._extras as { deduplicated: boolean }).deduplicated = false
    expect(full).toStrictEqual(before)
  })

  it('keeps a metadata key named __proto__ as data, and drops the optional fields a token lacks', () => {
    const metadata = JSON.parse('{"__proto__": "x", "a": "b"}') as Record<string, string>
    const bare: StoredToken = {
      id: 'id-0',
      tenant_id: 'tenant-0',
      type: 'token',
      data: 1,
      containers: [],
      metadata,
      created_by: 'app-0',
      created_at: '2029-01-01T00:00:00.000Z',
    }
    const copied = copiedToken(bare)
    expect(Object.keys(copied)).toHaveLength(8)
    expect(Object.keys(copied.metadata)).toEqual(['__proto__', 'a'])
    expect(Object.getPrototypeOf(copied.metadata)).toBe(Object.prototype)
  })
})
