import { BasisTheory } from '@basis-theory/basis-theory-js'
import { BasisTheoryClient } from '@basis-theory/node-sdk'
import { describe, expect, it } from 'vitest'
import { ServiceError, type Token } from '../../entry/index.js'
import { createTestVault } from '../../testing/vault.js'
import { withBtSocket } from './bt-socket.js'

// Each case follows Basis Theory's docs/api/tokens/tokenize.md (POST /tokenize).
describe('tokenize (docs/api/tokens/tokenize)', () => {
  it('Create Basic Token: plain values become token-type tokens, answered by their ids in the same shape', async () => {
    const vault = await createTestVault()
    const out = (await vault.client().tokens.tokenize({ first_name: 'John', last_name: 'Doe' })) as Record<
      string,
      string
    >
    expect(Object.keys(out)).toEqual(['first_name', 'last_name'])
    expect(await vault.client().tokens.get(out['first_name']!)).toMatchObject({ type: 'token', data: 'John' })
    expect((await vault.client().tokens.get(out['last_name']!)).data).toBe('Doe')
    await vault.close()
  })

  it('Create Token: one token body answers the token', async () => {
    const vault = await createTestVault()
    const out = (await vault.client().tokens.tokenize({
      type: 'token',
      data: 'Sensitive Value',
      metadata: { nonSensitiveField: 'Non-Sensitive Value' },
    })) as Token
    expect(out).toMatchObject({
      type: 'token',
      metadata: { nonSensitiveField: 'Non-Sensitive Value' },
      tenant_id: vault.tenant.id,
    })
    expect((await vault.client().tokens.get(out.id)).data).toBe('Sensitive Value')
    await vault.close()
  })

  it('Tokenize Array and Composite: arrays and nesting keep their shape; null stays', async () => {
    const vault = await createTestVault()
    const out = (await vault.client().tokens.tokenize({
      first_name: 'John',
      primary_card: { type: 'token', data: { number: '4242424242424242' }, containers: ['/pci/high/'] },
      sensitive_tags: ['preferred', { type: 'token', data: 'vip' }, null],
    })) as { first_name: string; primary_card: Token; sensitive_tags: [string, Token, null] }
    expect(out.primary_card).toMatchObject({ type: 'token', containers: ['/pci/high/'] })
    expect(typeof out.sensitive_tags[0]).toBe('string')
    expect(out.sensitive_tags[1]).toMatchObject({ type: 'token' })
    expect(out.sensitive_tags[2]).toBeNull()
    expect((await vault.client().tokens.get(out.sensitive_tags[0])).data).toBe('preferred')
    const arr = (await vault.client().tokens.tokenize(['John', 'Doe', { type: 'token', data: 'x' }])) as [
      string,
      string,
      Token,
    ]
    expect(arr.map((x) => typeof x)).toEqual(['string', 'string', 'object'])
    await vault.close()
  })

  it('refuses a bad body naming its path, more than 100 tokens, and a duplicate id; nothing is written', async () => {
    const vault = await createTestVault()
    const count = async () => (await vault.service.admin.exportState()).records.tokens.length
    const before = await count()
    const bad = await vault
      .client()
      .tokens.tokenize({ a: 'fine', card: { type: 'token', data: 'x', containers: ['nope'] } })
      .catch((e: unknown) => e)
    expect(bad).toBeInstanceOf(ServiceError)
    expect((bad as ServiceError).code).toBe('validation_failed')
    expect(Object.keys((bad as ServiceError).issues ?? {}).some((k) => k.startsWith('card.containers'))).toBe(
      true,
    )
    const many = await vault
      .client()
      .tokens.tokenize(Array.from({ length: 101 }, (_, i) => `v${i}`))
      .catch((e: unknown) => e)
    expect((many as ServiceError).code).toBe('validation_failed')
    const dup = await vault
      .client()
      .tokens.tokenize([
        { id: 'same', type: 'token', data: 1 },
        { id: 'same', type: 'token', data: 2 },
      ])
      .catch((e: unknown) => e)
    expect((dup as ServiceError).code).toBe('conflict')
    expect(await count()).toBe(before)
    const pub = await vault
      .client('public')
      .tokens.tokenize({ a: 'b' })
      .catch((e: unknown) => e)
    expect(pub).not.toBeInstanceOf(Error)
    const reader = await vault.service.admin.createApplication({
      tenantId: vault.tenant.id,
      name: 'r',
      type: 'private',
      permissions: ['token:read'],
    })
    expect(
      (
        (await vault.service
          .connect(reader.key)
          .tokens.tokenize({ a: 'b' })
          .catch((e: unknown) => e)) as ServiceError
      ).code,
    ).toBe('forbidden')
    await vault.close()
  })

  it('enlists in the transaction given: nothing is visible outside before commit, and a rollback drops it', async () => {
    const vault = await createTestVault()
    const tx = await vault.client().transactions.create()
    const inside = vault.client('private', { transactionId: tx.id })
    const out = (await inside.tokens.tokenize({ a: 'A' })) as { a: string }
    expect((await inside.tokens.get(out.a)).data).toBe('A')
    await expect(vault.client().tokens.get(out.a)).rejects.toMatchObject({ code: 'not_found' })
    await vault.client().transactions.rollback(tx.id)
    await expect(vault.client().tokens.get(out.a)).rejects.toMatchObject({ code: 'not_found' })
    await vault.close()
  })

  it('answers POST /tokenize 201 over HTTP, and basis-theory-js 1.79.3 bt.tokenize works unmodified', async () => {
    const vault = await createTestVault()
    const http = await vault.http(
      new Request('http://vault/tokenize', {
        method: 'POST',
        headers: { 'SVC-API-KEY': vault.keys.private, 'content-type': 'application/json' },
        body: JSON.stringify({ first_name: 'John' }),
      }),
    )
    expect(http.status).toBe(201)
    expect(typeof ((await http.json()) as { first_name: unknown }).first_name).toBe('string')
    expect(
      (
        await vault.http(
          new Request('http://vault/tokenize', {
            method: 'POST',
            headers: { 'SVC-API-KEY': vault.keys.private, 'content-type': 'application/json' },
            body: '[',
          }),
        )
      ).status,
    ).toBe(400)

    try {
      await withBtSocket(vault.service, async (url) => {
        const options = { apiBaseUrl: url, disableTelemetry: true }
        const bt = await new BasisTheory().init(vault.keys.private, options)
        const out = (await bt.tokenize({ first_name: 'Jane', card: { type: 'token', data: 'x' } })) as {
          first_name: string
          card: { id: string }
        }
        expect((await vault.client().tokens.get(out.first_name)).data).toBe('Jane')
        expect((await vault.client().tokens.get(out.card.id)).data).toBe('x')
      })
    } finally {
      await vault.close()
    }
  })
})

// Each case follows Basis Theory's docs/api/tokens/detokenize.mdx (POST /detokenize).
describe('detokenize (docs/api/tokens/detokenize)', () => {
  it('replaces data-only and full token expressions in any shape under token:read', async () => {
    const vault = await createTestVault()
    const card = await vault
      .client()
      .tokens.create({ type: 'token', data: { number: '4242' }, metadata: { k: 'v' } })
    const name = await vault.client().tokens.create({ type: 'token', data: 'Ann' })
    const out = (await vault.client().tokens.detokenize({
      card: `{{ ${card.id} }}`,
      greeting: `hello {{${name.id}}}!`,
      tokens: [`{{ token: ${name.id} }}`],
      untouched: 42,
    })) as unknown as { card: unknown; greeting: string; tokens: Token[]; untouched: number }
    expect(out.card).toEqual({ number: '4242' })
    expect(out.greeting).toBe('hello Ann!')
    expect(out.tokens[0]).toMatchObject({ id: name.id, type: 'token', data: 'Ann' })
    expect(out.untouched).toBe(42)
    await vault.close()
  })

  it('shows what the caller may read: a mask under a mask rule, 403 without token:read', async () => {
    const vault = await createTestVault()
    const card = await vault
      .client()
      .tokens.create({ type: 'token', data: '4242424242424242', mask: '****4242' })
    const masked = await vault.service.admin.createApplication({
      tenantId: vault.tenant.id,
      name: 'masked',
      type: 'private',
      rules: [
        { description: 'mask', priority: 1, container: '/', transform: 'mask', permissions: ['token:read'] },
      ],
    })
    expect(await vault.service.connect(masked.key).tokens.detokenize({ n: `{{ ${card.id} }}` })).toEqual({
      n: '****4242',
    })
    const error = await vault
      .client('public')
      .tokens.detokenize({ n: `{{ ${card.id} }}` })
      .catch((e: unknown) => e)
    expect((error as ServiceError).code).toBe('forbidden')
    await vault.close()
  })

  it('refuses an unknown token naming its path, an unknown filter naming its path, and more than 100 tokens', async () => {
    const vault = await createTestVault()
    const unknown = (await vault
      .client()
      .tokens.detokenize({ a: { b: '{{ nope }}' } })
      .catch((e: unknown) => e)) as ServiceError
    expect([unknown.code, Object.keys(unknown.issues ?? {})]).toEqual(['validation_failed', ['body.a.b']])
    const card = await vault.client().tokens.create({ type: 'token', data: { number: '1' } })
    const filter = (await vault
      .client()
      .tokens.detokenize({ n: [`{{ ${card.id} | no_such_filter }}`] })
      .catch((e: unknown) => e)) as ServiceError
    expect([filter.code, Object.keys(filter.issues ?? {})]).toEqual(['validation_failed', ['body.n.0']])
    const many = Array.from({ length: 101 }, (_, i) => `{{ t${i} }}`)
    expect(
      (
        (await vault
          .client()
          .tokens.detokenize(many)
          .catch((e: unknown) => e)) as ServiceError
      ).code,
    ).toBe('validation_failed')
    await vault.close()
  })

  it("runs an expression's filters, as the reference's examples do: a field of a card, whole or inside text", async () => {
    const vault = await createTestVault()
    const card = await vault.client().tokens.create({
      type: 'token',
      data: { number: '4242424242424242', expiration_month: 11, name: 'jane' },
    })
    const out = await vault.client().tokens.detokenize({
      number: `{{ ${card.id} | json: '$.number' }}`,
      month: `{{${card.id} | json: '$.expiration_month'}}`,
      text: `for {{ ${card.id} | json: '$.name' | upcase }} ending {{ ${card.id} | json: '$.number' | slice: -4, 4 }}`,
      whole: `{{ token: ${card.id} | json: '$.id' }}`,
    })
    expect(out).toEqual({
      number: '4242424242424242',
      month: 11,
      text: 'for JANE ending 4242',
      whole: card.id,
    })
    await vault.close()
  })

  it("reads through the caller's transaction, and @basis-theory/node-sdk tokenize and detokenize work unmodified", async () => {
    const vault = await createTestVault()
    const tx = await vault.client().transactions.create()
    const inside = vault.client('private', { transactionId: tx.id })
    const staged = await inside.tokens.create({ type: 'token', data: 'staged' })
    expect(await inside.tokens.detokenize({ s: `{{ ${staged.id} }}` })).toEqual({ s: 'staged' })
    expect(
      (
        (await vault
          .client()
          .tokens.detokenize({ s: `{{ ${staged.id} }}` })
          .catch((e: unknown) => e)) as ServiceError
      ).code,
    ).toBe('validation_failed')

    try {
      await withBtSocket(vault.service, async (url) => {
        const client = new BasisTheoryClient({
          apiKey: vault.keys.private,
          baseUrl: url,
          maxRetries: 0,
        })
        const tokenized = (await client.tokens.tokenize({ first_name: 'Nia' })) as { first_name: string }
        const back = await client.tokens.detokenize({ name: `{{ ${tokenized.first_name} }}` })
        expect(back).toEqual({ name: 'Nia' })
      })
    } finally {
      await vault.close()
    }
  })
})
