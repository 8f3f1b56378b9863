/**
 * Deliveries: the reference's envelope and signature (verified the way its docs show, with
 * `crypto.createVerify` and a stable stringify), a tampered body failing, retries on the manual
 * clock at the literal back-off steps, deliver now and deliver again, disabled and unsubscribed
 * webhooks sent nothing.
 */
import { constants, createVerify } from 'node:crypto'
import stringify from 'fast-json-stable-stringify'
import { describe, expect, it } from 'vitest'
import { createTestVault } from '../../testing/index.js'

const RECEIVER = 'https://hooks.example.test'

/** A vault whose receiver answers `status` (a function of the attempt number, from 1). */
async function vaultAnswering(status: (n: number) => number = () => 204) {
  let n = 0
  const v = await createTestVault({
    destinations: { [RECEIVER]: () => new Response(null, { status: status(++n) }) },
  })
  const hook = await v
    .client('management')
    .webhooks.create({ name: 'hook', url: `${RECEIVER}/in`, events: ['token.created', 'token.updated'] })
  return { v, hook, received: () => v.proxy.received(RECEIVER) }
}

/** The reference's sample verification (developers.basistheory.com › Webhooks › Signature Verification). */
function referenceVerify(body: string, signature: string, publicKey: string): boolean {
  const verifier = createVerify('SHA256')
  verifier.update(stringify(JSON.parse(body)))
  return verifier.verify(
    { key: publicKey, padding: constants.RSA_PKCS1_PSS_PADDING },
    Buffer.from(signature, 'base64'),
  )
}

describe('webhook deliveries', () => {
  it('a token create reaches the receiver with the reference envelope, signed, verifiable as documented', async () => {
    const { v, hook } = await vaultAnswering()
    const token = await v.client().tokens.create({ type: 'token', data: 'secret-4242', metadata: { k: 'v' } })
    await v.webhooks.deliverDue()
    const [got, ...more] = v.proxy.received(RECEIVER)
    expect(more).toEqual([])
    expect(got!.method).toBe('POST')
    expect(got!.url).toBe(`${RECEIVER}/in`)
    expect(got!.headers['bt-signature-version']).toBe('v1')
    expect(got!.headers['content-type']).toBe('application/json')
    const body = JSON.parse(got!.body)
    expect(body).toEqual({
      event: {
        id: expect.any(String),
        type: 'token.created',
        timestamp: '2030-01-01T00:00:00.000Z',
        tenant_id: v.tenant.id,
        trace_id: expect.any(String),
        data: {
          token: {
            id: token.id,
            type: 'token',
            metadata: { k: 'v' },
            containers: token.containers,
            created_by: v.applications.private.id,
            created_at: '2030-01-01T00:00:00.000Z',
            ...(token.fingerprint ? { fingerprint: token.fingerprint } : {}),
          },
          actor: { id: v.applications.private.id, type: 'application' },
        },
      },
      delivered_at: '2030-01-01T00:00:00.000Z',
    })
    expect(got!.body).not.toContain('secret-4242')
    const signature = got!.headers['bt-signature']!
    expect(referenceVerify(got!.body, signature, v.webhooks.publicKey)).toBe(true)
    expect(v.webhooks.verify(got!)).toBe(true)
    // One byte of the body changed: neither the reference's check nor the kit's passes.
    const tampered = got!.body.replace('token.created', 'token.deleted')
    expect(referenceVerify(tampered, signature, v.webhooks.publicKey)).toBe(false)
    expect(v.webhooks.verify({ ...got!, body: tampered })).toBe(false)
    const [delivery] = await v.webhooks.deliveries()
    expect(delivery).toMatchObject({ state: 'delivered', webhook_id: hook.id, event_type: 'token.created' })
    expect(delivery!.attempts).toEqual([{ at: '2030-01-01T00:00:00.000Z', ok: true, status: 204 }])
    await v.close()
  })

  it('retries a receiver answering 500 after 10 s, 20 s, 40 s … 5120 s, 11 attempts in all, then fails', async () => {
    const { v } = await vaultAnswering(() => 500)
    await v.client().tokens.create({ type: 'token', data: 'x' })
    await v.webhooks.deliverDue()
    expect(v.proxy.received(RECEIVER)).toHaveLength(1)
    const steps = [10_000, 20_000, 40_000, 80_000, 160_000, 320_000, 640_000, 1_280_000, 2_560_000, 5_120_000]
    for (const [i, step] of steps.entries()) {
      v.clock.advance(step - 1)
      await v.webhooks.deliverDue()
      expect(v.proxy.received(RECEIVER)).toHaveLength(i + 1)
      v.clock.advance(1)
      await v.webhooks.deliverDue()
      expect(v.proxy.received(RECEIVER)).toHaveLength(i + 2)
    }
    const [delivery] = await v.webhooks.deliveries()
    expect(delivery!.state).toBe('failed')
    expect(delivery!.attempts).toHaveLength(11)
    expect(delivery!.attempts.every((a) => a.status === 500 && !a.ok)).toBe(true)
    v.clock.advance(100_000_000)
    await v.webhooks.deliverDue()
    expect(v.proxy.received(RECEIVER)).toHaveLength(11)
    await v.close()
  })

  it('a failed attempt is tried again once the receiver recovers; each attempt is recorded', async () => {
    const { v } = await vaultAnswering((n) => (n === 1 ? 503 : 200))
    await v.client().tokens.create({ type: 'token', data: 'x' })
    await v.webhooks.deliverDue()
    v.clock.advance(10_000)
    await v.webhooks.deliverDue()
    const [delivery] = await v.webhooks.deliveries()
    expect(delivery!.state).toBe('delivered')
    expect(delivery!.attempts.map((a) => a.status)).toEqual([503, 200])
    // The same event both times: a receiver de-duplicates by event.id.
    const ids = v.proxy.received(RECEIVER).map((r) => JSON.parse(r.body).event.id)
    expect(new Set(ids).size).toBe(1)
    await v.close()
  })

  it('deliver now skips the back-off without moving the clock; deliver again repeats a delivered event', async () => {
    const { v } = await vaultAnswering((n) => (n === 1 ? 500 : 204))
    await v.client().tokens.create({ type: 'token', data: 'x' })
    await v.webhooks.deliverDue()
    expect(await v.webhooks.deliverDue()).toBe(0)
    expect(await v.webhooks.deliverNow()).toBe(1)
    const [delivery] = await v.webhooks.deliveries()
    expect(delivery!.state).toBe('delivered')
    const again = await v.webhooks.deliverAgain(delivery!.id)
    expect(again.state).toBe('delivered')
    expect(again.attempts).toHaveLength(3)
    const received = v.proxy.received(RECEIVER)
    expect(received).toHaveLength(3)
    expect(JSON.parse(received[2]!.body).event.id).toBe(JSON.parse(received[1]!.body).event.id)
    expect(v.webhooks.verify(received[2]!)).toBe(true)
    await v.close()
  })

  it('sends nothing to a disabled webhook or for an event type it did not subscribe to', async () => {
    const { v, hook } = await vaultAnswering()
    const token = await v.client().tokens.create({ type: 'token', data: 'x' })
    await v.client().tokens.delete(token.id)
    await v.webhooks.deliverDue()
    expect(v.proxy.received(RECEIVER).map((r) => JSON.parse(r.body).event.type)).toEqual(['token.created'])
    await v.client('management').webhooks.update(hook.id, {
      name: 'hook',
      url: `${RECEIVER}/in`,
      events: ['token.created'],
      status: 'disabled',
    })
    await v.client().tokens.create({ type: 'token', data: 'y' })
    await v.webhooks.deliverDue()
    expect(v.proxy.received(RECEIVER)).toHaveLength(1)
    await v.close()
  })

  it('a delivery waiting for its retry follows its webhook: the new url, or nothing once disabled, unsubscribed or deleted', async () => {
    // The first attempt of each delivery fails (500); every later one succeeds.
    const failedOnce = new Set<string>()
    const v = await createTestVault({
      destinations: {
        [RECEIVER]: async (request) => {
          const id = JSON.parse(await request.text()).event.id as string
          if (failedOnce.has(id)) return new Response(null, { status: 204 })
          failedOnce.add(id)
          return new Response(null, { status: 500 })
        },
      },
    })
    const management = v.client('management').webhooks
    const fields = { name: 'hook', url: `${RECEIVER}/in`, events: ['token.created'] }
    const waiting = async () => {
      const hook = await management.create(fields)
      await v.client().tokens.create({ type: 'token', data: 'x' })
      await v.webhooks.deliverDue()
      return hook
    }
    const retried = async () => {
      v.clock.advance(10_000)
      await v.webhooks.deliverDue()
    }
    const moved = await waiting()
    await management.update(moved.id, { ...fields, url: `${RECEIVER}/moved` })
    await retried()
    expect(v.proxy.received(RECEIVER).map((r) => new URL(r.url).pathname)).toEqual(['/in', '/moved'])
    await management.delete(moved.id)
    const changes = [
      (id: string) => management.update(id, { ...fields, status: 'disabled' }),
      (id: string) => management.update(id, { ...fields, events: ['token.updated'] }),
      (id: string) => management.delete(id),
    ]
    for (const change of changes) {
      const hook = await waiting()
      const before = v.proxy.received(RECEIVER).length
      await change(hook.id)
      await retried()
      expect(v.proxy.received(RECEIVER)).toHaveLength(before)
      await management.delete(hook.id).catch(() => {})
    }
    const states = (await v.service.admin.webhooks.deliveries(v.tenant.id)).map((d) => [
      d.state,
      d.attempts.at(-1)?.error ?? 'sent',
    ])
    expect(states).toEqual([
      ['delivered', 'sent'],
      ['failed', 'not sent: the webhook is disabled'],
      ['failed', 'not sent: the webhook no longer subscribes to token.created'],
      ['failed', 'not sent: the webhook was deleted'],
    ])
    await v.close()
  })
})
