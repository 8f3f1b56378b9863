/**
 * A request refused with 401 at admission (its key unknown, so its body is never read) is still
 * journaled, as a call with a bad key is in-process: actor `unknown`, no tenant, `unauthenticated`.
 */
import { describe, expect, it } from 'vitest'
import { createHttpHandler } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'

describe('admission: a refused key in the operation journal', () => {
  it('a 401 at admission is journaled under the unknown actor, with no tenant and no key', async () => {
    const service = await createService({
      store: memoryStore(),
      clock: manualClock('2030-01-01T00:00:00.000Z'),
      masterKey: new Uint8Array(32).fill(7),
      runner: null,
    })
    const handler = createHttpHandler(service)
    const badKey = 'key_not_a_real_key_000000000000'
    const answer = await handler(
      new Request('http://vault.test/tokens', {
        method: 'POST',
        headers: { 'svc-api-key': badKey, 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'token', data: 'x' }),
      }),
    )
    expect(answer.status).toBe(401)
    const entries = service.journal.query()
    expect(entries.map((e) => [e.operation, e.actor.kind, e.tenant_id, e.outcome])).toEqual([
      ['key.authenticate', 'unknown', null, { ok: false, code: 'unauthenticated' }],
    ])
    expect(JSON.stringify(entries)).not.toContain(badKey)
  })
})
