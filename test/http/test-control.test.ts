import { describe, expect, it } from 'vitest'
import { testControlHandler } from '../../adapters/http/test-control.js'
import { createTestVault } from '../../testing/vault.js'

const ADMIN = 'admin-token-for-tests-0123456789'

async function control(maxBodyBytes?: number) {
  const vault = await createTestVault()
  const handler = testControlHandler(vault.service, {
    clock: vault.clock,
    adminToken: ADMIN,
    initial: await vault.snapshot(),
    ...(maxBodyBytes ? { maxBodyBytes } : {}),
  })
  const call = (method: string, path: string, body?: RequestInit['body'], token = ADMIN) =>
    handler(
      new Request(`http://vault.test/_test/${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body, duplex: 'half' }),
      } as RequestInit),
    )
  return { vault, call }
}

describe('testControlHandler', () => {
  it('refuses a wrong token of the right length and a missing one with 401, changing nothing', async () => {
    const { vault, call } = await control()
    const wrong = ADMIN.replace(/.$/, 'X')
    for (const token of [wrong, '']) {
      const answer = await call('POST', 'clock', JSON.stringify({ advance_ms: 1000 }), token)
      expect(answer.status).toBe(401)
      expect(answer.headers.get('content-type')).toBe('application/problem+json')
    }
    expect(vault.clock.now().toISOString()).toBe('2030-01-01T00:00:00.000Z')
  })

  it('refuses a body over its limit with 400 before reading it all, and restores nothing', async () => {
    const { vault, call } = await control(1024)
    await vault.client().tokens.create({ id: 'kept', type: 'token', data: 'kept' })
    const before = JSON.stringify(await vault.snapshot())
    let pulled = 0
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++
        controller.enqueue(new Uint8Array(512).fill(0x20))
        if (pulled > 10_000) controller.close()
      },
    })
    const refused = await call('POST', 'restore', endless)
    expect(refused.status).toBe(400)
    expect(await refused.json()).toMatchObject({ status: 400, errors: { body: ['too large'] } })
    expect(pulled).toBeLessThan(10)
    expect(JSON.stringify(await vault.snapshot())).toBe(before)
  })

  it('answers a bad restore with a 400 naming the path, and a reset goes back to the start', async () => {
    const { vault, call } = await control()
    const snapshot = await vault.snapshot()
    const bad = structuredClone(snapshot) as unknown as { records: { tenants: { id: unknown }[] } }
    bad.records.tenants[0]!.id = 7
    const refused = await call('POST', 'restore', JSON.stringify(bad))
    expect(refused.status).toBe(400)
    expect(Object.keys(((await refused.json()) as { errors: object }).errors)).toEqual([
      'records.tenants.0.id',
    ])
    await vault.client().tokens.create({ id: 'made', type: 'token', data: 'x' })
    vault.clock.advance(60_000)
    expect((await call('POST', 'reset')).status).toBe(204)
    expect(JSON.stringify(await vault.snapshot())).toBe(JSON.stringify(snapshot))
  })

  it('filters the journal by operation and since (any ISO offset), and refuses a since that is no time', async () => {
    const { vault, call } = await control()
    await vault.client().tokens.create({ id: 'early', type: 'token', data: 'x' })
    vault.clock.advance(60_000)
    await vault.client().tokens.create({ id: 'late', type: 'token', data: 'y' })
    const since = encodeURIComponent('2030-01-01T01:00:30+01:00') // 00:00:30 UTC
    const answer = await call('GET', `journal?operation=token.create&since=${since}`)
    expect(answer.status).toBe(200)
    const { data } = (await answer.json()) as { data: { ids: string[] }[] }
    expect(data.map((e) => e.ids)).toEqual([['late']])
    const refused = await call('GET', 'journal?since=yesterday')
    expect(refused.status).toBe(400)
    expect(await refused.json()).toMatchObject({ errors: { since: ['an ISO time'] } })
  })
})
