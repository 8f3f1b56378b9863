import { createTestVault, loadFixture } from 'tokenvault/testing'
import { afterAll, afterEach, expect, it } from 'vitest'

// A memory store, a manual clock, a tenant, and a private, a public and a management key.
const vault = await createTestVault()
const clean = await vault.snapshot()
afterEach(() => vault.restore(clean)) // or vault.reset(): back to the state right after creation
afterAll(() => vault.close())

it('reveals a token to the private key, in-process and over HTTP', async () => {
  await vault.client().tokens.create({ id: 'card-1', type: 'card', data: { number: '4242424242424242' } })
  expect((await vault.client().tokens.get('card-1')).data).toEqual({ number: '4242424242424242' })
  const answer = await vault.http(
    new Request('http://vault/tokens/card-1', { headers: { 'SVC-API-KEY': vault.keys.private } }),
  )
  expect(await answer.json()).toMatchObject({ data: { number: '4242424242424242' } })
})

it('starts from the clean snapshot: the same id is free again', async () => {
  await vault.client().tokens.create({ id: 'card-1', type: 'card', data: { number: '5555555555554444' } })
})

it('tells of changes under Basis Theory event names', async () => {
  const seen: string[] = []
  const stop = vault.service.on('event', (event) => seen.push(event.type))
  const token = await vault.client().tokens.create({ type: 'token', data: 'x' })
  await vault.client().tokens.delete(token.id)
  stop()
  expect(seen).toEqual(['token.created', 'token.deleted'])
})

it('expires a session when the clock passes its 3 minutes', async () => {
  const card = await vault.client().tokens.create({ type: 'card', data: { number: '4242424242424242' } })
  const session = await vault.client('public').sessions.create()
  await vault.client().sessions.authorize({ nonce: session.nonce, permissions: ['token:read'] })
  const browser = vault.service.connect(session.session_key)
  expect((await browser.tokens.get(card.id)).id).toBe(card.id)
  vault.clock.advance(3 * 60_000)
  await expect(browser.tokens.get(card.id)).rejects.toMatchObject({ code: 'unauthenticated' })
})

it('loads a fixture with fixed ids and keys', async () => {
  await loadFixture(vault.service, {
    tenants: [
      {
        id: 'acme',
        name: 'Acme',
        applications: [
          {
            name: 'backend',
            type: 'private',
            key: 'key_backend_0123456789abcdefghij',
            permissions: ['token:read'],
          },
        ],
        tokens: [{ id: 'card-1', type: 'card', data: { number: '4242424242424242' }, mask: '4242' }],
      },
    ],
  })
  const backend = vault.service.connect('key_backend_0123456789abcdefghij')
  expect((await backend.tokens.get('card-1')).data).toBe('4242') // masked: no reveal rule
  const [read] = vault.service.journal.query({ tenant: 'acme', operation: 'token.get' })
  expect(read).toMatchObject({ actor: { kind: 'application' }, outcome: { ok: true }, ids: ['card-1'] })
})
