/**
 * The ephemeral proxy through the in-process client: detokenization expressions in JSON, form and
 * text bodies replaced under the caller's `token:use` access, the destination's answer as it is,
 * and what an in-process destination received.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { ServiceError } from '../../src/kernel/errors.js'
import { createTestVault, type TestVault } from '../../testing/vault.js'

const STRIPE = 'https://api.stripe.test'
let vault: TestVault
afterEach(() => vault?.close())

const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' }

async function withCard() {
  vault = await createTestVault({ destinations: { [STRIPE]: 'echo' } })
  const token = await vault.client().tokens.create({ type: 'card', data: card })
  return { token, client: vault.client() }
}

const failure = async (p: Promise<unknown>): Promise<ServiceError> => {
  try {
    await p
  } catch (error) {
    if (error instanceof ServiceError) return error
    throw error
  }
  throw new Error('expected a ServiceError')
}

const echoed = (answer: { body: string }) =>
  JSON.parse(answer.body) as { body: unknown; path: string; query: string }

describe('ephemeral proxy: expressions', () => {
  it('replaces a JSON path expression, a whole-data expression and a repeated one in a JSON body', async () => {
    const { token, client } = await withCard()
    const body = JSON.stringify({
      card: { number: `{{ ${token.id} | json: '$.number' }}`, all: `{{ ${token.id} }}` },
      again: [`last4 {{ ${token.id} | json: '$.number' | slice: -4, 4 }}`],
      plain: 'non-sensitive',
    })
    const answer = await client.proxy.invoke({
      method: 'POST',
      url: `${STRIPE}/v1`,
      path: '/charges',
      query: 'expand=1',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk_test' },
      body,
    })
    expect(answer.status).toBe(200)
    expect(answer.destination_status).toBe(200)
    const got = echoed(answer)
    expect(got.path).toBe('/v1/charges')
    expect(got.query).toBe('?expand=1')
    expect(got.body).toEqual({
      card: { number: card.number, all: card },
      again: ['last4 4242'],
      plain: 'non-sensitive',
    })
    const [received] = vault.proxy.received(STRIPE)
    expect(received?.headers.authorization).toBe('Bearer sk_test')
    expect(JSON.parse(received!.body).card.number).toBe(card.number)
  })

  it('replaces expressions deep in arrays of objects, keeps every other value and key as it was, and names the path of a bad one', async () => {
    const { token, client } = await withCard()
    const body = `{"items":[{"n":1},{"number":"{{ ${token.id} | json: '$.number' }}","note":"x"}],"__proto__":{"k":"{{ ${token.id} | json: '$.cvc' }}"},"tail":[true,null,2.5,"{{ no"]}`
    const call = { method: 'POST', url: STRIPE, headers: { 'content-type': 'application/json' } }
    await client.proxy.invoke({ ...call, body })
    const sent = vault.proxy.received()[0]!.body
    expect(sent).toBe(
      `{"items":[{"n":1},{"number":"${card.number}","note":"x"}],"__proto__":{"k":"${card.cvc}"},"tail":[true,null,2.5,"{{ no"]}`,
    )
    const bad = JSON.stringify({ items: [{ n: 1 }, { number: '{{ not an id }}' }] })
    const error = await failure(client.proxy.invoke({ ...call, body: bad }))
    expect(error.issues).toEqual({
      'body.items.1.number': ['holds a detokenization expression that does not name a token id'],
    })
    expect(vault.proxy.received()).toHaveLength(1)
  })

  it('replaces expressions in form and text bodies; bytes of another type pass as they are', async () => {
    const { token, client } = await withCard()
    const form = await client.proxy.invoke({
      method: 'POST',
      url: STRIPE,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `card[number]={{ ${token.id} | json: '$.number' }}&amount=100`,
    })
    expect(vault.proxy.received()[0]!.body).toBe(`card%5Bnumber%5D=${card.number}&amount=100`)
    expect(form.status).toBe(200)
    await client.proxy.invoke({
      method: 'PUT',
      url: STRIPE,
      headers: { 'content-type': 'text/plain' },
      body: `cvc={{ token: ${token.id} | json: '$.data.cvc' }};`,
    })
    expect(vault.proxy.received()[1]!.body).toBe('cvc=123;')
    const bytes = new Uint8Array([0xff, 0x7b, 0x7b, 0x20, 0x7d, 0x7d])
    await client.proxy.invoke({
      method: 'POST',
      url: STRIPE,
      headers: { 'content-type': 'application/octet-stream' },
      body: bytes,
    })
    expect(vault.proxy.received()[2]!.body).toBe(new TextDecoder().decode(bytes))
  })

  it('finds expressions in a form body as URLSearchParams and querystring write it (braces percent-encoded); a form without one is the same bytes', async () => {
    const { token, client } = await withCard()
    const body = new URLSearchParams({
      'payment_method_data[card][number]': `{{ token: ${token.id} | json: '$.data.number' }}`,
      'payment_method_data[type]': 'card',
    }).toString()
    expect(body).toContain('%7B%7B')
    const call = {
      method: 'POST',
      url: STRIPE,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    }
    await client.proxy.invoke({ ...call, body })
    const sent = new URLSearchParams(vault.proxy.received()[0]!.body)
    expect(sent.get('payment_method_data[card][number]')).toBe(card.number)
    expect(sent.get('payment_method_data[type]')).toBe('card')
    const plain = 'a=%7B%20not%20an%20expression&b=1+2'
    await client.proxy.invoke({ ...call, body: plain })
    expect(vault.proxy.received()[1]!.body).toBe(plain)
  })

  it('a token that does not exist, or is another tenant’s, is the reference’s 400; nothing is sent', async () => {
    const { client } = await withCard()
    const other = await vault.service.admin.createTenant({ name: 'other' })
    const { key } = await vault.service.admin.createApplication({
      tenantId: other.id,
      name: 'o',
      type: 'private',
      permissions: ['token:create'],
    })
    const theirs = await vault.service.connect(key).tokens.create({ type: 'token', data: 'theirs' })
    for (const id of ['unknown_token_id', theirs.id]) {
      const error = await failure(
        client.proxy.invoke({
          method: 'POST',
          url: STRIPE,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ invalid: `{{ ${id} }}` }),
        }),
      )
      expect(error.code).toBe('validation_failed')
      expect(error.message).toContain(`Failed to detokenize some tokens: ${id}`)
    }
    expect(vault.proxy.received()).toEqual([])
  })
})

describe('ephemeral proxy: the path', () => {
  it("stays under the destination's path: a .. segment, as text or %2e, that would climb out is a 400", async () => {
    const { client } = await withCard()
    const call = { method: 'GET', url: `${STRIPE}/v1/charges` }
    for (const path of ['/../../admin', '/%2e%2e/%2E%2e/admin', '/a/../../b']) {
      const error = await failure(client.proxy.invoke({ ...call, path }))
      expect(error.code).toBe('validation_failed')
      expect(Object.keys(error.issues ?? {})).toEqual(['path'])
    }
    expect(vault.proxy.received()).toEqual([])
    // One that climbs back down stays under it.
    await client.proxy.invoke({ ...call, path: '/a/../b' })
    expect(vault.proxy.received().map((r) => new URL(r.url).pathname)).toEqual(['/v1/charges/b'])
  })

  it('refuses separators a destination may decode after it normalized the path: %2F, %5C, ..; segments', async () => {
    const { client } = await withCard()
    const call = { method: 'GET', url: `${STRIPE}/v1/charges` }
    for (const path of [
      '/..%2fadmin',
      '/..%2Fadmin',
      '/..%5cadmin',
      '/a%2fb',
      '/..;/admin',
      '/%2e%2E;x/admin',
    ]) {
      const error = await failure(client.proxy.invoke({ ...call, path }))
      expect(error.code, path).toBe('validation_failed')
      expect(Object.keys(error.issues ?? {})).toEqual(['path'])
    }
    expect(vault.proxy.received()).toEqual([])
    // A `;` elsewhere, and `%2e` or `%20` in a name, pass.
    await client.proxy.invoke({ ...call, path: '/a;b/c%2ed%20e' })
    expect(vault.proxy.received()).toHaveLength(1)
  })

  it("does not forward the headers the caller's Connection header names", async () => {
    const { client } = await withCard()
    await client.proxy.invoke({
      method: 'GET',
      url: `${STRIPE}/v1`,
      headers: { connection: 'Upgrade, X-Keep', 'x-keep': '1', 'x-other': '2' },
    })
    const [received] = vault.proxy.received()
    expect(received!.headers).not.toHaveProperty('x-keep')
    expect(received!.headers).toHaveProperty('x-other', '2')
  })
})

describe('pre-configured proxies: the application they act as', () => {
  it('binding an application asks application:update beside proxy:create; keeping the one bound does not', async () => {
    vault = await createTestVault({ destinations: { [STRIPE]: 'echo' } })
    const keyWith = async (permissions: string[]) =>
      vault.service.connect(
        (
          await vault.service.admin.createApplication({
            tenantId: vault.tenant.id,
            name: permissions.join(' '),
            type: 'management',
            permissions: permissions as never,
          })
        ).key,
      ).proxies
    const fields = { name: 'p', destination_url: STRIPE, application: { id: vault.applications.private.id } }
    const proxyOnly = await keyWith(['proxy:create', 'proxy:update'])
    expect((await failure(proxyOnly.create(fields))).code).toBe('forbidden')
    const made = await proxyOnly.create({ name: 'p', destination_url: STRIPE })
    expect((await failure(proxyOnly.patch(made.id, { application: fields.application }))).code).toBe(
      'forbidden',
    )
    const both = await keyWith(['proxy:create', 'proxy:update', 'application:update'])
    const bound = await both.create(fields)
    expect(bound.application_id).toBe(vault.applications.private.id)
    // Renamed by the key that may not bind: the application bound stays, and is no new binding.
    await expect(proxyOnly.update(bound.id, { ...fields, name: 'q' })).resolves.toMatchObject({ name: 'q' })
  })
})

describe('ephemeral proxy: access', () => {
  it('needs token:use even without expressions; a redact rule is 403; a mask rule sends the mask', async () => {
    const { token } = await withCard()
    const noUse = await vault.service.admin.createApplication({
      tenantId: vault.tenant.id,
      name: 'reader',
      type: 'private',
      permissions: ['token:read'],
    })
    const call = { method: 'POST', url: STRIPE, headers: { 'content-type': 'application/json' } }
    expect((await failure(vault.service.connect(noUse.key).proxy.invoke({ ...call, body: '{}' }))).code).toBe(
      'forbidden',
    )
    const redact = await vault.service.admin.createApplication({
      tenantId: vault.tenant.id,
      name: 'redact',
      type: 'private',
      rules: [
        { description: 'r', priority: 1, container: '/', transform: 'redact', permissions: ['token:use'] },
      ],
    })
    const body = JSON.stringify({ n: `{{ ${token.id} }}` })
    expect((await failure(vault.service.connect(redact.key).proxy.invoke({ ...call, body }))).code).toBe(
      'forbidden',
    )
    expect(vault.proxy.received()).toEqual([])
  })

  it('a key that may use a token but not read it gets no value of it in a failure', async () => {
    const { token } = await withCard()
    const user = await vault.service.admin.createApplication({
      tenantId: vault.tenant.id,
      name: 'user',
      type: 'private',
      permissions: ['token:use'],
    })
    const client = vault.service.connect(user.key)
    expect((await failure(client.tokens.get(token.id))).code).toBe('forbidden')
    const call = { method: 'POST', url: STRIPE, headers: { 'content-type': 'application/json' } }
    for (const expression of [
      `{{ ${token.id} | json: '$.number' | prepend: 'a' | plus: 1 }}`,
      `{{ ${token.id} | json: '$.number' | append: 'x' | to_number }}`,
      `{{ ${token.id} | json: '$.cvc' | prepend: 'a' | times: 2 }}`,
    ]) {
      const error = await failure(client.proxy.invoke({ ...call, body: JSON.stringify({ x: expression }) }))
      expect(error.code).toBe('validation_failed')
      const said = JSON.stringify({ message: error.message, issues: error.issues })
      expect(said).toMatch(/needs a number|can't cast/)
      expect(said).not.toContain('4242')
      expect(said).not.toContain('a123')
    }
    expect(vault.proxy.received()).toEqual([])
  })

  it('a session key detokenizes only under the rules it was granted', async () => {
    const { token, client } = await withCard()
    const { session_key, nonce } = await vault.client('public').sessions.create({})
    const call = { method: 'POST', url: STRIPE, headers: { 'content-type': 'application/json' } }
    const body = JSON.stringify({ n: `{{ ${token.id} | json: '$.number' }}` })
    expect((await failure(vault.service.connect(session_key).proxy.invoke({ ...call, body }))).code).toBe(
      'forbidden',
    )
    await client.sessions.authorize({
      nonce,
      rules: [
        {
          description: 'use',
          priority: 1,
          conditions: [{ attribute: 'id', operator: 'equals', value: token.id }],
          transform: 'reveal',
          permissions: ['token:use'],
        },
      ],
    })
    const answer = await vault.service.connect(session_key).proxy.invoke({ ...call, body })
    expect(echoed(answer).body).toEqual({ n: card.number })
  })
})
