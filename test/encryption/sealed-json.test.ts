/**
 * A token whose data is a long string with nothing to escape is sealed from its bytes between
 * brackets and quotes, never from a second string made by `JSON.stringify` (a 400 KB create made
 * five strings of its size, each young garbage; `npm run bench:attacks`, attack (a)). It opens to
 * the same data and mask as one sealed the other way; anything else is serialized as before.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { newDataKey, tenantKey } from '../../src/encryption/keyring.js'
import { openToken, type Sealing, sealToken } from '../../src/encryption/sealing.js'
import { type Json, type StoredToken, utf8NeedsJsonEscape } from '../../src/kernel/index.js'

const key = tenantKey(newDataKey())
const sealing: Sealing = {
  keyOf: () => key,
  sealKeyOf: () => key,
  searchIndexPurpose: 'search',
  asRead: (token) => token,
}

const token = (data: Json, mask?: Json): StoredToken => ({
  id: 'id-1',
  tenant_id: 'tenant-1',
  type: 'token',
  data,
  ...(mask === undefined ? {} : { mask }),
  containers: ['/general/high/'],
  metadata: {},
  created_by: 'app',
  created_at: '2030-01-01T00:00:00.000Z',
})

afterEach(() => vi.restoreAllMocks())

const cases: [string, Json, Json | undefined][] = [
  ['65 537 plain characters', 'y'.repeat(65_537), undefined],
  [
    '70 000 characters of two bytes each, with a mask',
    'é'.repeat(70_000),
    { last4: '{{ data | slice: -4 }}' },
  ],
  ['a long string with a quote', `${'y'.repeat(70_000)}"`, undefined],
  ['a long string with a backslash and a mask', `${'y'.repeat(70_000)}\\`, '****'],
  ['a long string with a control character', `${'y'.repeat(70_000)}\n`, undefined],
  ['a long string of surrogate pairs', '😀'.repeat(40_000), undefined],
  ['a long string with a lone surrogate', `${'y'.repeat(70_000)}\ud800`, undefined],
  ['a long string with U+0000 and U+001F', `\u0000${'y'.repeat(70_000)}\u001f`, undefined],
  ['a short string', 'plain', 'mask'],
  ['an object', { number: 'y'.repeat(70_000) }, undefined],
]

describe('sealing a token from its JSON bytes', () => {
  it.each(cases)('%s opens to its data and mask', async (_, data, mask) => {
    const sealed = await sealToken(sealing, token(data, mask))
    expect(sealed.data).not.toEqual(data)
    const opened = await openToken(sealing, sealed)
    expect(opened.data).toEqual(data)
    expect(opened.mask).toEqual(mask)
  })

  it('a long well-formed string with nothing to escape is never serialized; one with an escape is', async () => {
    const stringify = vi.spyOn(JSON, 'stringify')
    const plain = 'é😀'.repeat(30_000)
    await sealToken(sealing, token(plain, '****'))
    expect(stringify.mock.calls.some(([value]) => Array.isArray(value) && value[0] === plain)).toBe(false)
    const quoted = `${plain}"`
    await sealToken(sealing, token(quoted))
    expect(stringify.mock.calls.some(([value]) => Array.isArray(value) && value[0] === quoted)).toBe(true)
  })

  it('65 536 characters go the usual way, 65 537 from their bytes', async () => {
    const stringify = vi.spyOn(JSON, 'stringify')
    const at = 'y'.repeat(65_536)
    const past = 'y'.repeat(65_537)
    await sealToken(sealing, token(at))
    await sealToken(sealing, token(past))
    const serialized = (value: string) =>
      stringify.mock.calls.some(([v]) => Array.isArray(v) && v[0] === value)
    expect([serialized(at), serialized(past)]).toEqual([true, false])
  })

  it('finds every character JSON escapes in UTF-8 bytes, and none in text without one', () => {
    for (let c = 0; c < 0x20; c++)
      expect(utf8NeedsJsonEscape(Buffer.from(`é😀${String.fromCharCode(c)}y`))).toBe(true)
    expect(utf8NeedsJsonEscape(Buffer.from('a"b'))).toBe(true)
    expect(utf8NeedsJsonEscape(Buffer.from('a\\b'))).toBe(true)
    const plain = ' !#$%&()*+-./09:;<=>?@AZ[]^_`az{|}~\u007f\u0080é€😀中文\u2028'
    expect(utf8NeedsJsonEscape(Buffer.from(plain))).toBe(false)
    expect(JSON.stringify(plain)).toBe(`"${plain}"`)
  })
})
