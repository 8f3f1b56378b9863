/**
 * A session create made idempotent is never replayed: its answer is a new session key, and the
 * public key that asks for it is shared by every visitor of an app, so a replay to a second holder
 * sending the same idempotency key would hand it the first one's session. The first answer says
 * `Idempotency-Replayable: false`; a repeat answers 409 and makes nothing.
 */
import { expect, it } from 'vitest'
import { createHttpHandler } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createTestVault } from '../../testing/vault.js'

it('answers a session create once with Idempotency-Replayable: false; its repeat is a 409 that makes no session', async () => {
  const store = memoryStore()
  const vault = await createTestVault({ store, public: { permissions: ['token:create'] } })
  const handler = createHttpHandler(vault.service)
  const create = (idempotencyKey: string) =>
    handler(
      new Request('http://vault.test/sessions', {
        method: 'POST',
        headers: { 'svc-api-key': vault.keys.public, 'svc-idempotency-key': idempotencyKey },
      }),
    )
  const first = await create('same')
  expect(first.status).toBe(201)
  expect(first.headers.get('idempotency-replayable')).toBe('false')
  const { session_key } = (await first.json()) as { session_key: string }
  const repeat = await create('same')
  expect(repeat.status).toBe(409)
  expect(await repeat.text()).not.toContain(session_key)
  expect((await store.dump()).sessions).toHaveLength(1)
  // In process alike.
  const client = vault.service.connect(vault.keys.public, { idempotencyKey: 'other' })
  await client.sessions.create()
  expect(
    (await client.sessions.create().catch((e: { code: string }) => e)) as { code: string },
  ).toMatchObject({
    code: 'conflict',
  })
})
