import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import type { Json } from '../../src/kernel/types.js'
import { abaValid, luhnValid } from '../../src/tokens/token-types.js'
import { failure, setup } from './setup.js'

const VISA = '4242424242424242'
const card = { number: VISA, expiration_month: 12, expiration_year: 2031, cvc: '123' }
const bank = { routing_number: '021000021', account_number: '1234567890' }

/** Valid data of each documented type, with its default container and masked data. */
const TYPES: [type: string, data: Json, container: string, masked: Json][] = [
  ['token', 'Sensitive Value', '/general/high/', undefined as never],
  ['card', card, '/pci/high/', { number: 'XXXXXXXXXXXX4242', expiration_month: 12, expiration_year: 2031 }],
  ['bank', bank, '/bank/high/', { routing_number: '021000021', account_number: 'XXXXXX7890' }],
  ['card_number', '36227206271667', '/pci/high/', 'XXXXXXXXXX1667'],
  ['us_bank_account_number', '1234567890', '/bank/high/', 'XXXXXX7890'],
  ['us_bank_routing_number', '021000021', '/bank/low/', 'XXXXX0021'],
  ['social_security_number', '123-45-6789', '/pii/high/', 'XXX-XX-6789'],
  ['employer_id_number', '12-3456789', '/pii/high/', 'XX-XXX6789'],
]

/** Invalid data of each type and the field the 400 names. */
const INVALID: [type: string, data: Json, field: string][] = [
  ['card', 'not an object', 'data'],
  ['card', { expiration_month: 12, expiration_year: 2031 }, 'data.number'],
  ['card', { number: '4242424242424241' }, 'data.number'],
  ['card', { number: '424242424242' }, 'data.number'],
  ['card', { number: '4242 4242 4242 4242' }, 'data.number'],
  ['card', { number: 4242424242424242 }, 'data.number'],
  ['card', { number: VISA, expiration_month: 13, expiration_year: 2031 }, 'data.expiration_month'],
  ['card', { number: VISA, expiration_month: 12 }, 'data.expiration_year'],
  ['card', { number: VISA, expiration_month: 12, expiration_year: '2031' }, 'data.expiration_year'],
  ['card', { number: VISA, cvc: '12' }, 'data.cvc'],
  ['card', { number: VISA, pin: '1234' }, 'data.pin'],
  ['card_number', '4242424242424241', 'data'],
  ['card_number', '42424242424242424242', 'data'],
  ['bank', { routing_number: '021000022', account_number: '1234567890' }, 'data.routing_number'],
  ['bank', { routing_number: '021000021', account_number: '12' }, 'data.account_number'],
  ['bank', { routing_number: '021000021' }, 'data.account_number'],
  ['us_bank_routing_number', '123456789', 'data'],
  ['us_bank_routing_number', '02100002', 'data'],
  ['us_bank_account_number', '123456789012345678', 'data'],
  ['us_bank_account_number', '12a45', 'data'],
  ['social_security_number', '123456', 'data'],
  ['social_security_number', '000-12-3456', 'data'],
  ['social_security_number', '666-12-3456', 'data'],
  ['social_security_number', '912-12-3456', 'data'],
  ['social_security_number', '123-00-4567', 'data'],
  ['social_security_number', '123-45-0000', 'data'],
  ['social_security_number', '123-456789', 'data'],
  ['employer_id_number', '123-456789', 'data'],
  ['employer_id_number', '12345678', 'data'],
  ['employer_id_number', 123456789, 'data'],
]

describe('token types', () => {
  it('checksums: Luhn and ABA', () => {
    expect(luhnValid(VISA)).toBe(true)
    expect(luhnValid('4242424242424241')).toBe(false)
    expect(abaValid('021000021')).toBe(true)
    expect(abaValid('011000015')).toBe(true)
    expect(abaValid('021000022')).toBe(false)
  })

  it('each type takes valid data, with its default container, mask and a fingerprint', async () => {
    const { client, keyFor } = await setup()
    const maskReader = (await keyFor('private', ['token:read'])).client
    for (const [type, data, container, masked] of TYPES) {
      const created = await client.tokens.create({ type, data })
      expect(created.containers, type).toEqual([container])
      expect(created.fingerprint, type).toMatch(/^[A-Za-z0-9_-]{43}$/)
      // token:read without rules reads under `mask`: the type's mask on the data.
      const read = await maskReader.tokens.get(created.id)
      if (type === 'token') expect(read).not.toHaveProperty('data')
      else expect(read.data, type).toEqual(masked)
    }
  })

  it('refuses invalid data with a 400 naming the field, writing nothing', async () => {
    const { client, store } = await setup()
    const before = (await store.dump()).tokens.length
    for (const [type, data, field] of INVALID) {
      const e = await failure(client.tokens.create({ type, data }))
      expect(e.code, `${type} ${JSON.stringify(data)}`).toBe('validation_failed')
      expect(Object.keys(e.issues ?? {}), `${type} ${JSON.stringify(data)}`).toEqual([field])
    }
    expect((await store.dump()).tokens.length).toBe(before)
  })

  it('accepts both SSN and EIN forms, and the documented masks keep their dashes', async () => {
    const { client, keyFor } = await setup()
    const reader = (await keyFor('private', ['token:read'])).client
    const plain = await client.tokens.create({ type: 'social_security_number', data: '123456789' })
    expect((await reader.tokens.get(plain.id)).data).toBe('XXXXX6789')
    const ein = await client.tokens.create({ type: 'employer_id_number', data: '123456789' })
    expect((await reader.tokens.get(ein.id)).data).toBe('XXXXX6789')
    // SSN fingerprints ignore the dashes (the default expression removes them).
    const dashed = await client.tokens.create({ type: 'social_security_number', data: '123-45-6789' })
    expect(dashed.fingerprint).toBe(plain.fingerprint)
  })

  it('a given container, mask and fingerprint expression replace the defaults', async () => {
    const { client, keyFor } = await setup()
    const reader = (await keyFor('private', ['token:read'])).client
    const t = await client.tokens.create({
      type: 'card',
      data: card,
      containers: ['/pci/low/'],
      mask: { last4: '{{ data.number | last4 }}', exp: "{{ data | card_exp: 'MM/YY' }}" },
      fingerprint_expression: '{{ data.number | last4 }}',
    })
    expect(t.containers).toEqual(['/pci/low/'])
    expect(t.fingerprint_expression).toBe('{{ data.number | last4 }}')
    expect((await reader.tokens.get(t.id)).data).toEqual({ last4: '4242', exp: '12/31' })
    expect(t.data).toEqual({ last4: '4242', exp: '12/31' })
    const other = await client.tokens.create({
      type: 'card',
      data: { number: '4000056655665556' },
      fingerprint_expression: '{{ data.number | last4 }}',
    })
    expect(other.fingerprint).not.toBe(t.fingerprint)
    const same = await client.tokens.create({
      type: 'card',
      data: { number: '5555555555554444' },
      fingerprint_expression: '{{ data.number | last4 }}',
    })
    expect(same.fingerprint).not.toBe(t.fingerprint)
  })

  it('bad expressions answer 400 naming the field and filter', async () => {
    const { client } = await setup()
    const mask = await failure(client.tokens.create({ type: 'token', data: 'x', mask: '{{ data | nope }}' }))
    expect(mask.issues).toEqual({ mask: ['uses the unknown filter "nope"'] })
    const fp = await failure(
      client.tokens.create({ type: 'token', data: 'x', fingerprint_expression: '{{ data | upcase: }}' }),
    )
    expect(Object.keys(fp.issues ?? {})).toEqual(['fingerprint_expression'])
    const index = await failure(
      client.tokens.create({
        type: 'token',
        data: 'x',
        search_indexes: ['{{ data }}', '{{ data | rot13 }}'],
      }),
    )
    expect(index.issues).toEqual({ 'search_indexes.1': ['uses the unknown filter "rot13"'] })
    const evaluated = await failure(
      client.tokens.create({ type: 'token', data: 'abc', mask: '{{ data | to_number }}' }),
    )
    expect(Object.keys(evaluated.issues ?? {})).toEqual(['mask'])
  })

  it('masks follow the read transforms: mask evaluates, reveal shows data, redact shows none', async () => {
    const s = await setup()
    const t = await s.client.tokens.create({ id: 'c1', type: 'card', data: card })
    const reader = (transform: 'mask' | 'reveal' | 'redact') =>
      s.keyFor(
        'private',
        [],
        [{ description: 'pci', priority: 1, container: '/pci/', transform, permissions: ['token:read'] }],
      )
    expect((await (await reader('mask')).client.tokens.get(t.id)).data).toEqual({
      number: 'XXXXXXXXXXXX4242',
      expiration_month: 12,
      expiration_year: 2031,
    })
    expect((await (await reader('reveal')).client.tokens.get(t.id)).data).toEqual(card)
    expect(await (await reader('redact')).client.tokens.get(t.id)).not.toHaveProperty('data')
    // The mask is evaluated on the current data: an update shows through it.
    await s.client.tokens.update(t.id, { data: { number: '5555555555554444' } })
    expect(((await (await reader('mask')).client.tokens.get(t.id)).data as { number: string }).number).toBe(
      'XXXXXXXXXXXX4444',
    )
  })

  it('update validates the merged data and recomputes the fingerprint; mask null restores the default', async () => {
    const { client } = await setup()
    const t = await client.tokens.create({ type: 'card', data: card, mask: 'fixed' })
    const bad = await failure(client.tokens.update(t.id, { data: { number: '1234' } }))
    expect(Object.keys(bad.issues ?? {})).toEqual(['data.number'])
    const updated = await client.tokens.update(t.id, { data: { number: '5555555555554444' }, mask: null })
    expect(updated.fingerprint).not.toBe(t.fingerprint)
    expect(updated.mask).toMatchObject({ number: '{{ data.number | reveal_last: 4 }}' })
    const again = await client.tokens.create({ type: 'card', data: { number: '5555555555554444' } })
    expect(again.fingerprint).toBe(updated.fingerprint)
  })
})

describe('fingerprints', () => {
  it('equal for equal contents of one type, different across types and tenants; a keyed hash, never the text', async () => {
    const s = await setup()
    const a = await s.client.tokens.create({ type: 'card_number', data: VISA })
    const b = await s.client.tokens.create({ type: 'card_number', data: VISA })
    const other = await s.client.tokens.create({ type: 'card_number', data: '5555555555554444' })
    const token = await s.client.tokens.create({ type: 'token', data: VISA })
    expect(a.fingerprint).toBe(b.fingerprint)
    expect(other.fingerprint).not.toBe(a.fingerprint)
    expect(token.fingerprint).not.toBe(a.fingerprint)
    const tenant = await s.service.admin.createTenant({ name: 'other' })
    const elsewhere = await s.keyFor('private', ['token:create', 'token:read'], undefined, tenant.id)
    const c = await elsewhere.client.tokens.create({ type: 'card_number', data: VISA })
    expect(c.fingerprint).not.toBe(a.fingerprint)
    // Stored in the clear as the keyed hash: not the number, nor an unkeyed hash of it.
    const dump = JSON.stringify(await s.store.dump())
    expect(dump).not.toContain(VISA)
    for (const plain of [VISA, `card_number\u0000${VISA}`]) {
      expect(a.fingerprint).not.toBe(createHash('sha256').update(plain).digest('base64url'))
    }
    expect(dump).toContain(a.fingerprint!)
  })

  it('GET /v2/tokens filters by fingerprint (and sees the caller transaction)', async () => {
    const s = await setup()
    const a = await s.client.tokens.create({ id: 'a', type: 'card_number', data: VISA })
    await s.client.tokens.create({ id: 'b', type: 'card_number', data: VISA })
    await s.client.tokens.create({ id: 'c', type: 'card_number', data: '5555555555554444' })
    const listed = await s.client.tokens.listV2({ fingerprint: a.fingerprint })
    expect(listed.data.map((t) => t.id)).toEqual(['a', 'b'])
    expect((await s.client.tokens.listV2({ fingerprint: 'nothing' })).data).toEqual([])
    const tx = await s.client.transactions.create()
    const inside = s.service.connect(s.full.key, { transactionId: tx.id })
    await inside.tokens.create({ id: 'd', type: 'card_number', data: VISA })
    expect((await inside.tokens.listV2({ fingerprint: a.fingerprint })).data.map((t) => t.id)).toEqual([
      'a',
      'b',
      'd',
    ])
    const http = await s.vault.http(
      new Request(`http://vault/v2/tokens?fingerprint=${a.fingerprint}`, {
        headers: { 'SVC-API-KEY': s.full.key },
      }),
    )
    expect(((await http.json()) as { data: { id: string }[] }).data.map((t) => t.id)).toEqual(['a', 'b'])
  })
})

describe('deduplicate_token', () => {
  it('a duplicate answers the existing token, marked deduplicated; without the flag a new token is made', async () => {
    const { client, store } = await setup()
    const first = await client.tokens.create({ type: 'card', data: card, deduplicate_token: true })
    expect(first._extras).toEqual({ deduplicated: false })
    const again = await client.tokens.create({ type: 'card', data: card, deduplicate_token: true })
    expect(again.id).toBe(first.id)
    expect(again._extras).toEqual({ deduplicated: true })
    const plain = await client.tokens.create({ type: 'card', data: card })
    expect(plain.id).not.toBe(first.id)
    expect(plain).not.toHaveProperty('_extras')
    expect((await store.dump()).tokens).toHaveLength(2)
  })

  it('a caller that cannot read the existing token gets only id, type, tenant_id, fingerprint and containers', async () => {
    const s = await setup()
    const first = await s.client.tokens.create({
      type: 'token',
      data: 'secret',
      metadata: { m: 'v' },
      deduplicate_token: true,
    })
    const writer = await s.keyFor('public', ['token:create'])
    const answer = await writer.client.tokens.create({
      type: 'token',
      data: 'secret',
      deduplicate_token: true,
    })
    expect(answer).toEqual({
      id: first.id,
      type: 'token',
      tenant_id: first.tenant_id,
      containers: ['/general/high/'],
      fingerprint: first.fingerprint,
      _extras: { deduplicated: true },
    })
  })

  it('concurrent creates of one duplicate answer one token', async () => {
    const { client, store } = await setup()
    const answers = await Promise.all(
      Array.from({ length: 12 }, () =>
        client.tokens.create({ type: 'card_number', data: VISA, deduplicate_token: true }),
      ),
    )
    expect(new Set(answers.map((a) => a.id)).size).toBe(1)
    expect(answers.filter((a) => !a._extras?.deduplicated)).toHaveLength(1)
    expect((await store.dump()).tokens).toHaveLength(1)
  })

  it('expired tokens are not matched', async () => {
    const { client, clock } = await setup()
    const first = await client.tokens.create({
      type: 'card_number',
      data: VISA,
      deduplicate_token: true,
      expires_at: '2030-01-01T01:00:00.000Z',
    })
    clock.advance(2 * 60 * 60_000)
    const next = await client.tokens.create({ type: 'card_number', data: VISA, deduplicate_token: true })
    expect(next.id).not.toBe(first.id)
    expect(next._extras).toEqual({ deduplicated: false })
  })

  it('tokenize deduplicates against stored tokens and within the request', async () => {
    const { client, store } = await setup()
    const stored = await client.tokens.create({ type: 'card_number', data: VISA })
    const answer = (await client.tokens.tokenize([
      { type: 'card_number', data: VISA, deduplicate_token: true },
      { type: 'card_number', data: '5555555555554444', deduplicate_token: true },
      { type: 'card_number', data: '5555555555554444', deduplicate_token: true },
    ])) as { id: string }[]
    expect(answer[0]!.id).toBe(stored.id)
    expect(answer[1]!.id).toBe(answer[2]!.id)
    expect((await store.dump()).tokens).toHaveLength(2)
  })
})

describe('child create', () => {
  it('accepts every documented Create Token body field', async () => {
    const { client } = await setup()
    const parent = await client.tokens.create({ type: 'token', data: 'p' })
    const child = await client.tokens.children.create(parent.id, {
      id: 'kid',
      type: 'token',
      data: 'Sensitive Value',
      mask: '{{ data | reveal_last: 4 }}',
      containers: ['/general/high/'],
      metadata: { nonSensitiveField: 'Non-Sensitive Value' },
      search_indexes: ['{{ data }}', '{{ data | last4 }}'],
      fingerprint_expression: '{{ data }}',
      deduplicate_token: true,
      expires_at: '8/26/2030 7:23:57 PM -07:00',
    })
    expect(child).toMatchObject({
      id: 'kid',
      data: 'XXXXXXXXXXXalue',
      search_indexes: ['{{ data }}', '{{ data | last4 }}'],
      fingerprint_expression: '{{ data }}',
      expires_at: '2030-08-27T02:23:57.000Z',
      _extras: { deduplicated: false },
    })
    const listed = await client.tokens.children.list(parent.id)
    expect(listed.data.map((t) => t.id)).toEqual(['kid'])
    const intent = await failure(
      client.tokens.children.create(parent.id, { type: 'token', data: 'x', token_intent_id: 'ti' }),
    )
    expect(Object.keys(intent.issues ?? {})).toEqual(['token_intent_id'])
  })
})

describe('fingerprints across a snapshot', () => {
  it('are made again under the restored tenant keys: duplicates still match after an import', async () => {
    const s = await setup()
    const before = await s.client.tokens.create({
      id: 'kept',
      type: 'card_number',
      data: VISA,
      fingerprint_expression: '{{ data | last4 }}',
    })
    const snapshot = await s.service.admin.exportState()
    // Into the store that holds the tenant: it keeps its keys, and so its fingerprints.
    await s.service.admin.importState(JSON.parse(JSON.stringify(snapshot)))
    expect((await s.client.tokens.get('kept')).fingerprint).toBe(before.fingerprint)
    // After a reset the tenant is new to the store: new keys, and its fingerprints made again under them.
    await s.service.admin.clearState()
    await s.service.admin.importState(JSON.parse(JSON.stringify(snapshot)))
    const restored = await s.client.tokens.get('kept')
    expect(restored.fingerprint_expression).toBe('{{ data | last4 }}')
    const twin = await s.client.tokens.create({
      type: 'card_number',
      data: '4000000000024242',
      fingerprint_expression: '{{ data | last4 }}',
      deduplicate_token: true,
    })
    expect(twin.id).toBe('kept')
    expect(restored.fingerprint).toBe(twin.fingerprint)
    expect(restored.fingerprint).not.toBe(before.fingerprint)
  })
})

describe('large free-form tokens', () => {
  it('a token too large for its default fingerprint expression is made without a fingerprint', async () => {
    const { client } = await setup()
    const big = await client.tokens.create({ type: 'token', data: { blob: 'x'.repeat(1_100_000) } })
    expect(big).not.toHaveProperty('fingerprint')
    const small = await client.tokens.create({ type: 'token', data: { blob: 'x' } })
    expect(small.fingerprint).toBeTypeOf('string')
  })
})

describe('deduplicate_token in a transaction', () => {
  it('matches committed tokens and the transaction staged ones; a token it deleted is not matched', async () => {
    const s = await setup()
    const committed = await s.client.tokens.create({ id: 'c', type: 'card_number', data: VISA })
    const tx = await s.client.transactions.create()
    const inside = s.service.connect(s.full.key, { transactionId: tx.id })
    const dup = await inside.tokens.create({ type: 'card_number', data: VISA, deduplicate_token: true })
    expect(dup.id).toBe(committed.id)
    const staged = await inside.tokens.create({
      id: 's',
      type: 'card_number',
      data: '5555555555554444',
      deduplicate_token: true,
    })
    expect(staged._extras).toEqual({ deduplicated: false })
    const again = await inside.tokens.create({
      type: 'card_number',
      data: '5555555555554444',
      deduplicate_token: true,
    })
    expect(again.id).toBe('s')
    await inside.tokens.delete('c')
    const fresh = await inside.tokens.create({ type: 'card_number', data: VISA, deduplicate_token: true })
    expect(fresh.id).not.toBe('c')
    await s.client.transactions.commit(tx.id)
    expect(
      (await s.client.tokens.listV2({ fingerprint: committed.fingerprint })).data.map((t) => t.id),
    ).toEqual([fresh.id])
  })
})
