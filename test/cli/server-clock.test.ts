/**
 * The test clock: a ticking one (real time plus a shift) that jumps on demand; the control plane
 * refuses to move any test clock back unless `allow_backwards` says so; every control-plane call is
 * logged (method, path, status; never a body).
 */
import { expect, it } from 'vitest'
import { serve } from '../../bin/serve.js'
import { manualClock, shiftedClock } from '../../src/kernel/clock.js'

const ADMIN = 'admin-token-for-clock-tests-0123'

async function server(testClock: 'manual' | 'ticking') {
  const logged: string[] = []
  const s = await serve({
    port: 0,
    host: '127.0.0.1',
    store: 'memory',
    print: () => {},
    log: (line) => logged.push(line),
    testMode: true,
    adminToken: ADMIN,
    testClock,
  })
  const clock = async (body?: unknown) => {
    const r = await fetch(`${s.url}/_test/clock`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    return { status: r.status, body: (await r.json()) as { now: string; detail?: string } }
  }
  return { s, clock, logged }
}

it('shiftedClock runs with its base, shifted by set and advance', () => {
  const base = manualClock('2030-01-01T00:00:00.000Z')
  const clock = shiftedClock(base)
  expect(clock.now().toISOString()).toBe('2030-01-01T00:00:00.000Z')
  base.advance(5)
  expect(clock.now().toISOString()).toBe('2030-01-01T00:00:00.005Z')
  clock.advance(3_600_000)
  base.advance(1)
  expect(clock.now().toISOString()).toBe('2030-01-01T01:00:00.006Z')
  clock.set('2031-01-01T00:00:00.000Z')
  base.advance(7)
  expect(clock.now().toISOString()).toBe('2031-01-01T00:00:00.007Z')
  expect(shiftedClock(base, '2040-01-01T00:00:00.000Z').now().toISOString()).toBe('2040-01-01T00:00:00.000Z')
})

it('--test-clock ticking: the time moves between calls, and jumps an hour on demand', async () => {
  const { s, clock } = await server('ticking')
  try {
    const first = Date.parse((await clock()).body.now)
    let later = first
    for (let i = 0; i < 10_000 && later === first; i++) later = Date.parse((await clock()).body.now)
    expect(later).toBeGreaterThan(first)
    const jumped = await clock({ advance_ms: 3_600_000 })
    expect(jumped.status).toBe(200)
    expect(Date.parse(jumped.body.now) - later).toBeGreaterThanOrEqual(3_600_000)
  } finally {
    await s.close()
  }
})

it('going back is refused (400, clock unchanged) unless allow_backwards is true', async () => {
  for (const kind of ['manual', 'ticking'] as const) {
    const { s, clock } = await server(kind)
    try {
      const before = Date.parse((await clock()).body.now)
      const back = await clock({ advance_ms: -5 })
      expect(back.status).toBe(400)
      expect(back.body.detail).toContain('allow_backwards')
      const past = await clock({ set: '2020-01-01T00:00:00.000Z' })
      expect(past.status).toBe(400)
      expect(Date.parse((await clock()).body.now)).toBeGreaterThanOrEqual(before)
      expect((await clock({ advance_ms: 0 })).status).toBe(200)
      const allowed = await clock({ set: '2020-01-01T00:00:00.000Z', allow_backwards: true })
      expect(allowed.status).toBe(200)
      expect(Date.parse(allowed.body.now)).toBeLessThan(Date.parse('2020-01-01T00:00:01.000Z'))
      expect((await clock({ advance_ms: -5, allow_backwards: true })).status).toBe(200)
      expect((await clock({ advance_ms: -5, allow_backwards: 'yes' })).status).toBe(400)
    } finally {
      await s.close()
    }
  }
})

it('every control-plane call is logged with its status, a clock move with the new time', async () => {
  const { s, clock, logged } = await server('manual')
  try {
    await clock({ set: '2031-05-01T00:00:00.000Z' })
    await clock({ advance_ms: -1 })
    await fetch(`${s.url}/_test/snapshot`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } })
    expect(logged).toContain('control: POST /_test/clock 200 clock now 2031-05-01T00:00:00.000Z')
    expect(logged).toContain('control: POST /_test/clock 400')
    expect(logged).toContain('control: POST /_test/snapshot 200')
  } finally {
    await s.close()
  }
})
