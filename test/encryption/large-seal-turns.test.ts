/**
 * A large token is fingerprinted, serialized, encrypted and encoded each in a turn of the event
 * loop of its own (`setImmediate`), so another tenant's request runs between the steps of a 400 KB
 * create instead of waiting behind all of them (`npm run bench:attacks`, attack (a)).
 */
import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'

async function client() {
  const service = createService({
    store: memoryStore(),
    clock: manualClock('2030-01-01T00:00:00Z'),
    runner: null,
    masterKey: randomBytes(32),
    auditLog: false,
  })
  const tenant = await service.admin.createTenant({ name: 't' })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'app',
    type: 'private',
    permissions: ['token:create', 'token:read'],
    rules: [
      {
        description: 'all',
        priority: 1,
        container: '/',
        transform: 'reveal' as const,
        permissions: ['token:create' as const, 'token:read' as const],
      },
    ],
  })
  return service.connect(key)
}

/** How many turns of the event loop other work got while `run` ran. */
async function turnsDuring(run: () => Promise<unknown>): Promise<number> {
  let turns = 0
  let running = true
  const tick = () => {
    turns++
    if (running) setImmediate(tick)
  }
  setImmediate(tick)
  await run()
  running = false
  return turns
}

describe('a large create leaves the event loop to others between its steps', () => {
  it('sealing: 65 536 characters of JSON seal in the same turn, 65 537 in a turn of their own', async () => {
    const c = await client()
    await c.tokens.create({ type: 'token', data: 'warm' })
    // `[data]` is what is sealed: a string of n characters is n + 4 characters of JSON.
    const at = await turnsDuring(() => c.tokens.create({ type: 'token', data: 'y'.repeat(65_532) }))
    const past = await turnsDuring(() => c.tokens.create({ type: 'token', data: 'y'.repeat(65_533) }))
    expect(past).toBeGreaterThan(at)
  })

  it('fingerprinting: a source of 65 536 characters hashes in the same turn, 65 537 in a turn of its own', async () => {
    const c = await client()
    await c.tokens.create({ type: 'token', data: 'warm' })
    // The source is the type, U+0000, then the rendered expression: 6 + n characters here; the
    // data's JSON (n + 4) stays under the sealing's bound.
    const make = (n: number) => () =>
      c.tokens.create({ type: 'token', data: 'y'.repeat(n), fingerprint_expression: '{{ data }}' })
    const at = await turnsDuring(make(65_530))
    const past = await turnsDuring(make(65_531))
    expect(past).toBeGreaterThanOrEqual(at + 2)
  })

  it('a 400 KB create with a fingerprint takes turns to fingerprint and to seal; its data reads back whole', async () => {
    const c = await client()
    await c.tokens.create({ type: 'token', data: 'warm' })
    const small = await turnsDuring(() =>
      c.tokens.create({ type: 'token', data: 'y'.repeat(100), fingerprint_expression: '{{ data }}' }),
    )
    let id = ''
    const large = await turnsDuring(async () => {
      id = (
        await c.tokens.create({
          type: 'token',
          data: 'y'.repeat(400_000),
          fingerprint_expression: '{{ data }}',
        })
      ).id
    })
    // Hashing and what follows it, then encrypting and encoding: a turn before each.
    expect(large - small).toBeGreaterThanOrEqual(4)
    expect((await c.tokens.get(id)).data).toBe('y'.repeat(400_000))
  })
})

describe('a write of many tokens', () => {
  it('seals 100 tokens of 16 KB (1.6 MB) with a turn for other work after each 256 KiB of data', async () => {
    const c = await client()
    const body = Object.fromEntries(
      Array.from({ length: 100 }, (_, i) => [`t${i}`, { type: 'token', data: `${i}`.padEnd(16_000, 'x') }]),
    )
    // 1 600 000 characters in steps of 262 144: at least 6 turns between them.
    expect(await turnsDuring(() => c.tokens.tokenize(body))).toBeGreaterThanOrEqual(6)
  })
})
