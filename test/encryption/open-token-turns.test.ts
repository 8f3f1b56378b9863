/**
 * A large token opens in bounded steps (256 KiB of sealed bytes a step: base64 decoded, then
 * decrypted, then its text decoded, then parsed, a turn of the event loop between two), so another
 * tenant's request runs while one token of 1 MB opens instead of waiting behind all of it
 * (`npm run bench:attacks`, attack (e): the proxy reads the token before its filters run).
 */
import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'
import {
  newDataKey,
  openValue,
  openValueInSteps,
  sealValue,
  tenantKey,
} from '../../src/encryption/keyring.js'
import { turnsWhile } from '../support/turns.js'

const turnsDuring = turnsWhile

const AAD = 'tokenvault:token:v1:t:id'

describe('openValueInSteps', () => {
  const key = tenantKey(newDataKey())
  const value = ['é<&>'.repeat(3_000)]
  const sealed = sealValue(key, value, AAD)

  it('opens what openValue opens, from base64 or bytes, taking a turn between steps', async () => {
    // 15 004 bytes of JSON (`é` is 2): 8 header, 12 IV, 15 004 ciphertext, 16 tag; 20 056 base64
    // characters, decoded 4 000 (3 000 bytes) at a time: 6 steps (5 turns); 15 004 bytes decrypted
    // 3 000 at a time: 6 steps (5 turns); then the text, then the parse: 2 turns.
    const bytes = Buffer.from(sealed, 'base64')
    expect([bytes.length, sealed.length]).toEqual([15_040, 20_056])
    const fromText = await turnsDuring(() => openValueInSteps(key, sealed, AAD, 3_000))
    expect(fromText.value).toEqual(openValue(key, sealed, AAD))
    expect(fromText.turns).toBe(12)
    const fromBytes = await turnsDuring(() => openValueInSteps(key, bytes, AAD, 3_000))
    expect(fromBytes.value).toEqual(value)
    expect(fromBytes.turns).toBe(7)
  })

  it('a ciphertext that does not open fails as openValue fails: a changed byte, another AAD, a version not held', async () => {
    const bytes = Buffer.from(sealed, 'base64')
    const changed = Buffer.from(bytes)
    changed[5_000]! ^= 1
    const other = tenantKey(newDataKey())
    const cases: [Parameters<typeof openValue>[0], string | Uint8Array, string][] = [
      [key, changed, AAD],
      [key, changed.toString('base64'), AAD],
      [key, sealed, `${AAD}x`],
      [other, sealed, AAD],
    ]
    for (const [k, s, aad] of cases) {
      const expected = (() => {
        try {
          openValue(k, s, aad)
        } catch (error) {
          return (error as Error).message
        }
        throw new Error('openValue opened it')
      })()
      await expect(openValueInSteps(k, s, aad, 3_000)).rejects.toThrow(expected)
    }
  })
})

async function client() {
  const service = createService({
    store: memoryStore(),
    clock: manualClock('2030-01-01T00:00:00Z'),
    runner: null,
    masterKey: randomBytes(32),
    auditLog: false,
  })
  const tenant = await service.admin.createTenant({ name: 't' })
  const permissions = ['token:create' as const, 'token:read' as const]
  const rules = [
    { description: 'all', priority: 1, container: '/', transform: 'reveal' as const, permissions },
  ]
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'app',
    type: 'private',
    permissions,
    rules,
  })
  return service.connect(key)
}

describe('a token read opens in steps of at most 256 KiB of sealed bytes', () => {
  it('a 1 MB token gives other work turns while it opens and reads back whole; a small one takes none more', async () => {
    const c = await client()
    const big = '&'.repeat(1_000_000)
    const large = await c.tokens.create({ type: 'big', data: big })
    const small = await c.tokens.create({ type: 'small', data: 'x'.repeat(100_000) })
    const read = await turnsDuring(() => c.tokens.get(large.id))
    const readSmall = await turnsDuring(() => c.tokens.get(small.id))
    // 1 000 012 bytes sealed: 4 base64 steps, 4 decrypt steps, the text, the parse.
    expect(read.turns).toBeGreaterThanOrEqual(readSmall.turns + 8)
    expect(read.value.data).toBe(big)
    expect(readSmall.value.data).toBe('x'.repeat(100_000))
  })
})
