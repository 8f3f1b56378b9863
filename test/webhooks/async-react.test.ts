/**
 * Asynchronous reacts through the durable outbox (docs/reactors.md › Asynchronous reacts): accepted
 * in one store write as an outbox entry (sealed: its arguments are detokenized), run by the outbox's
 * dispatcher, the result kept for `reactors.result` (node-sdk 5's `reactors.results.get`), and with a
 * `callback_url` POSTed there as a delivery of the same outbox, retried as webhook deliveries are.
 * The runner is a stand-in (no sandbox): these tests are about the outbox, not about formulas.
 */
import { describe, expect, it } from 'vitest'
import { routedEgress } from '../../adapters/egress/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'
import type { FormulaRunner, RunOutcome } from '../../src/kernel/index.js'
import { createTestVault } from '../../testing/index.js'

const RECEIVER = 'https://hooks.example.test'

/** A runner answering `{ raw: { doubled: 2n } }` for `args.n`, or what `answer` says; counts its runs. */
function fakeRunner(answer?: (args: Record<string, unknown>) => RunOutcome) {
  const runs: Record<string, unknown>[] = []
  const runner: FormulaRunner = {
    check: async () => null,
    run: async (_code, request) => {
      const args = request.args as Record<string, unknown>
      runs.push(args)
      return answer ? answer(args) : { ok: true, value: { raw: { doubled: Number(args.n) * 2 } }, logs: [] }
    },
    close: async () => {},
  }
  return { runner, runs }
}

async function vaultWith(runner: FormulaRunner, status: () => number = () => 204) {
  const store = memoryStore()
  const v = await createTestVault({
    store,
    runner,
    destinations: { [RECEIVER]: () => new Response(null, { status: status() }) },
  })
  const management = v.client('management')
  const reactor = await management.reactors.create({
    name: 'double',
    code: 'module.exports = async (req) => ({ raw: { doubled: req.args.n * 2 } })',
  })
  const app = await management.applications.create({
    name: 'user',
    type: 'private',
    permissions: ['token:use', 'token:create', 'token:read'],
  })
  return { v, store, reactor, user: v.service.connect(app.key!) }
}

describe('asynchronous reacts on the durable outbox', () => {
  it('reactAsync answers a request id at once; the run is an outbox entry, its result read by reactors.result', async () => {
    const { runner, runs } = fakeRunner()
    const { v, reactor, user } = await vaultWith(runner)
    const { asyncReactorRequestId: id } = await user.reactors.reactAsync(reactor.id, { args: { n: 21 } })
    expect(id).toMatch(/^[0-9a-f-]{36}$/)
    await v.webhooks.deliverDue()
    expect(runs).toEqual([{ n: 21 }])
    expect(await user.reactors.result(reactor.id, id)).toEqual({ raw: { doubled: 42 }, tokens: {} })
    const [entry] = await v.service.admin.webhooks.deliveries(v.tenant.id)
    expect(entry).toMatchObject({ id, kind: 'react', reactor_id: reactor.id, state: 'delivered' })
    expect(entry!.attempts).toEqual([{ at: '2030-01-01T00:00:00.000Z', ok: true }])
  })

  it('the accepted entry is sealed at rest: detokenized args never reach the store in the clear', async () => {
    const { runner, runs } = fakeRunner((args) => ({
      ok: true,
      value: { raw: { seen: args.card } },
      logs: [],
    }))
    const { v, store, reactor, user } = await vaultWith(runner)
    const token = await user.tokens.create({ type: 'token', data: 'plain-4242-secret' })
    await user.reactors.reactAsync(reactor.id, { args: { card: `{{ ${token.id} }}` } })
    await v.webhooks.deliverDue()
    expect(runs).toEqual([{ card: 'plain-4242-secret' }])
    const stored = JSON.stringify(await store.dump())
    expect(stored).not.toContain('plain-4242-secret')
  })

  it('a run that fails answers its error from reactors.result, as the synchronous react throws it', async () => {
    const { runner } = fakeRunner(() => ({
      ok: false,
      kind: 'thrown',
      message: 'Bad Request',
      status: 400,
      errors: { error: ['declined'] },
    }))
    const { v, reactor, user } = await vaultWith(runner)
    const { asyncReactorRequestId: id } = await user.reactors.reactAsync(reactor.id, { args: {} })
    await v.webhooks.deliverDue()
    await expect(user.reactors.result(reactor.id, id)).rejects.toMatchObject({
      code: 'formula_failed',
      status: 400,
      issues: { error: ['declined'] },
    })
  })

  it('reactors.result: 404 for an unknown id or another reactor, 409 before the run ends', async () => {
    const { runner } = fakeRunner()
    const { v, reactor, user } = await vaultWith(runner)
    await expect(
      user.reactors.result(reactor.id, '0190f3a0-0000-7000-8000-000000000000'),
    ).rejects.toMatchObject({ code: 'not_found' })
    const other = await v.client('management').reactors.create({ name: 'o', code: reactor.code! })
    // The dispatcher's first pass is on the event loop: the read below comes before it runs.
    const { asyncReactorRequestId: id } = await user.reactors.reactAsync(reactor.id, { args: { n: 1 } })
    await expect(user.reactors.result(reactor.id, id)).rejects.toMatchObject({ code: 'conflict' })
    await v.webhooks.deliverDue()
    await expect(user.reactors.result(other.id, id)).rejects.toMatchObject({ code: 'not_found' })
    expect(await user.reactors.result(reactor.id, id)).toMatchObject({ raw: { doubled: 2 } })
  })

  it('a callback_url gets the result as an outbox delivery, retried at 10 s on the manual clock', async () => {
    const { runner } = fakeRunner()
    let answer = 500
    const { v, reactor, user } = await vaultWith(runner, () => answer)
    await user.reactors.reactAsync(reactor.id, { args: { n: 4 }, callback_url: `${RECEIVER}/done` })
    await v.webhooks.deliverDue()
    expect(v.proxy.received(RECEIVER).map((r) => JSON.parse(r.body))).toEqual([
      { raw: { doubled: 8 }, tokens: {} },
    ])
    answer = 200
    v.clock.advance(9_999)
    await v.webhooks.deliverDue()
    expect(v.proxy.received(RECEIVER)).toHaveLength(1)
    v.clock.advance(1)
    await v.webhooks.deliverDue()
    expect(v.proxy.received(RECEIVER)).toHaveLength(2)
    const kinds = (await v.service.admin.webhooks.deliveries(v.tenant.id)).map((e) => [e.kind, e.state])
    expect(kinds).toEqual([
      ['react', 'delivered'],
      ['callback', 'delivered'],
    ])
  })

  it('a callback_url not taken is retried 10 s, 20 s, 40 s … 5 120 s after each failure, 11 attempts in all, then fails', async () => {
    const { runner } = fakeRunner()
    const { v, reactor, user } = await vaultWith(runner, () => 503)
    await user.reactors.reactAsync(reactor.id, { args: { n: 1 }, callback_url: `${RECEIVER}/done` })
    await v.webhooks.deliverDue()
    expect(v.proxy.received(RECEIVER)).toHaveLength(1)
    const steps = [10_000, 20_000, 40_000, 80_000, 160_000, 320_000, 640_000, 1_280_000, 2_560_000, 5_120_000]
    for (const [i, step] of steps.entries()) {
      v.clock.advance(step - 1)
      await v.webhooks.deliverDue()
      expect(v.proxy.received(RECEIVER), `retry ${i + 1} 1 ms early`).toHaveLength(i + 1)
      v.clock.advance(1)
      await v.webhooks.deliverDue()
      expect(v.proxy.received(RECEIVER), `retry ${i + 1} when due`).toHaveLength(i + 2)
    }
    const callback = (await v.service.admin.webhooks.deliveries(v.tenant.id)).find(
      (e) => e.kind === 'callback',
    )
    expect(callback!.state).toBe('failed')
    expect(callback!.attempts).toHaveLength(11)
    v.clock.advance(100_000_000)
    await v.webhooks.deliverDue()
    expect(v.proxy.received(RECEIVER)).toHaveLength(11)
  })

  it('a busy runner is tried again after the back-off, not answered as an error', async () => {
    let busy = true
    const { runner, runs } = fakeRunner((args) =>
      busy
        ? { ok: false, kind: 'busy', message: 'busy', retryAfterSec: 1 }
        : { ok: true, value: { raw: { doubled: Number(args.n) * 2 } }, logs: [] },
    )
    const { v, reactor, user } = await vaultWith(runner)
    const { asyncReactorRequestId: id } = await user.reactors.reactAsync(reactor.id, { args: { n: 3 } })
    await v.webhooks.deliverDue()
    await expect(user.reactors.result(reactor.id, id)).rejects.toMatchObject({ code: 'conflict' })
    busy = false
    v.clock.advance(10_000)
    await v.webhooks.deliverDue()
    expect(runs).toHaveLength(2)
    expect(await user.reactors.result(reactor.id, id)).toMatchObject({ raw: { doubled: 6 } })
  })
})

/** A tenant of `service` with a reactor, and a private application's client that may use it. */
async function reactorOf(service: ReturnType<typeof createService>) {
  const tenant = await service.admin.createTenant({ name: 't' })
  const app = (type: 'management' | 'private', permissions: ['reactor:create'] | ['token:use']) =>
    service.admin.createApplication({ tenantId: tenant.id, name: type, type, permissions })
  const reactor = await service
    .connect((await app('management', ['reactor:create'])).key)
    .reactors.create({ name: 'r', code: 'module.exports = 1' })
  const user = service.connect((await app('private', ['token:use'])).key)
  return { tenant, reactor, user }
}

describe('the backlog bound of asynchronous reacts', () => {
  it('maxPendingDeliveriesPerTenant: 3 — of 5 concurrent accepts, 3 are recorded and 2 answer 429', async () => {
    const { runner } = fakeRunner()
    const service = createService({
      store: memoryStore(),
      clock: manualClock('2030-01-01T00:00:00.000Z'),
      runner,
      webhookDelivery: 'manual',
      maxPendingDeliveriesPerTenant: 3,
    })
    const { tenant, reactor, user } = await reactorOf(service)
    const outcomes = await Promise.allSettled(
      Array.from({ length: 5 }, (_, n) => user.reactors.reactAsync(reactor.id, { args: { n } })),
    )
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(3)
    const refused = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason.code] : []))
    expect(refused).toEqual(['too_many_requests', 'too_many_requests'])
    expect(await service.admin.webhooks.deliveries(tenant.id)).toHaveLength(3)
    await service.close()
  })

  it('a callback waiting for its retry holds its place until delivered; then the tenant is accepted again', async () => {
    const { runner } = fakeRunner()
    let answer = 503
    const clock = manualClock('2030-01-01T00:00:00.000Z')
    const service = createService({
      store: memoryStore(),
      clock,
      runner,
      egress: [RECEIVER],
      egressClient: routedEgress({ [RECEIVER]: () => new Response(null, { status: answer }) }),
      webhookDelivery: 'manual',
      maxPendingDeliveriesPerTenant: 2,
    })
    const { tenant, reactor, user } = await reactorOf(service)
    const react = () =>
      user.reactors.reactAsync(reactor.id, { args: { n: 1 }, callback_url: `${RECEIVER}/done` })
    await react()
    await react()
    // Both ran; their callbacks failed and wait for a retry: still 2 pending, the bound.
    await service.admin.webhooks.deliverDue()
    const pending = async () =>
      (await service.admin.webhooks.deliveries(tenant.id)).filter((e) => e.state === 'pending')
    expect((await pending()).map((e) => e.kind)).toEqual(['callback', 'callback'])
    await expect(react()).rejects.toMatchObject({ code: 'too_many_requests' })
    answer = 200
    clock.advance(10_000)
    await service.admin.webhooks.deliverDue()
    expect(await pending()).toEqual([])
    await expect(react()).resolves.toMatchObject({ asyncReactorRequestId: expect.any(String) })
    await service.close()
  })
})
