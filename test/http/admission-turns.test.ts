/**
 * A tenant's requests that end within the turn of the event loop they began in (a memory store
 * answers in promise jobs) hold no place in flight, so the in-flight share alone never limited
 * them: one tenant's 32 connections of small creates ran every request they had sent in one turn,
 * and another tenant's GET, which waits a turn for its audit entry's commit, waited for all of
 * them (`npm run bench:attacks -- --only f`: B's p99 from 2.5 to 38 ms, 15x). While another
 * tenant is active, a tenant is let in at most `maxInFlightPerTenantContended` (2) requests a turn;
 * the rest wait for the next turn, in order.
 */
import { describe, expect, it } from 'vitest'
import { Admission, admissionBounds } from '../../adapters/http/admission.js'
import { createHttpHandler } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'
import { tenantWithClient } from '../support/tenants.js'

const turn = () => new Promise<void>((go) => setImmediate(go))

describe('admission: requests a tenant is let in per turn while another tenant is active', () => {
  it('lets in 2 that each end before the next begins, and the 3rd on the next turn', async () => {
    const admission = new Admission(admissionBounds({}), () => 0)
    expect(admission.enter('b', 0)).toBe(true)
    expect(admission.enter('a', 0)).toBe(true)
    admission.leave('a', 0)
    expect(admission.enter('a', 0)).toBe(true)
    admission.leave('a', 0)
    const third = admission.enter('a', 0)
    expect(third).toBeInstanceOf(Promise)
    expect(admission.load('a')).toMatchObject({ inFlight: 0, waiting: 1 })
    await turn()
    expect(admission.load('a')).toMatchObject({ inFlight: 1, waiting: 0 })
    await third
  })

  it('follows the contended share when it is set: 3 a turn, the 4th waits', async () => {
    const admission = new Admission(admissionBounds({ maxInFlightPerTenantContended: 3 }), () => 0)
    admission.enter('b', 0)
    for (let i = 0; i < 3; i++) {
      expect(admission.enter('a', 0)).toBe(true)
      admission.leave('a', 0)
    }
    expect(admission.enter('a', 0)).toBeInstanceOf(Promise)
    await turn()
    expect(admission.load('a')).toMatchObject({ inFlight: 1, waiting: 0 })
  })

  it('alone (no other tenant for over 1000 ms), a tenant is let in as many a turn as come', () => {
    const clock = { ms: 0 }
    const admission = new Admission(admissionBounds({}), () => clock.ms)
    admission.enter('b', 0)
    admission.leave('b', 0)
    clock.ms = 1001
    for (let i = 0; i < 40; i++) {
      expect(admission.enter('a', 0)).toBe(true)
      admission.leave('a', 0)
    }
  })

  it('over HTTP on a memory store: 8 creates of one tenant sent together while another is active are answered at most 2 a turn', async () => {
    const service = createService({ store: memoryStore(), clock: manualClock(), runner: null })
    const handler = createHttpHandler(service)
    const a = await tenantWithClient(service, 'a')
    const b = await tenantWithClient(service, 'b')
    const token = await b.client.tokens.create({ type: 'token', data: 'b' })
    const call = (key: string, method: string, path: string, body?: unknown) =>
      handler(
        new Request(`http://vault${path}`, {
          method,
          headers: { 'BT-API-KEY': key, 'content-type': 'application/json' },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        }),
      )
    // B is active: its read answered, within the last second.
    expect((await call(b.key, 'GET', `/tokens/${token.id}`)).status).toBe(200)
    const answeredAt: number[] = []
    let turns = 0
    const tick = async () => {
      while (answeredAt.length < 8) {
        await turn()
        turns++
      }
    }
    const ticking = tick()
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        const res = await call(a.key, 'POST', '/tokens', { type: 'token', data: 'a' })
        expect(res.status).toBe(201)
        answeredAt.push(turns)
      }),
    )
    await ticking
    // At most 2 in any one turn, and so over at least 4 turns.
    const perTurn = new Map<number, number>()
    for (const t of answeredAt) perTurn.set(t, (perTurn.get(t) ?? 0) + 1)
    expect(Math.max(...perTurn.values())).toBeLessThanOrEqual(2)
    expect(perTurn.size).toBeGreaterThanOrEqual(4)
    await service.close()
  })
})
