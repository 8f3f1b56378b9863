import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { createHttpHandler, type HttpLogEvent } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { openValue, sealValue, tenantKey } from '../../src/encryption/keyring.js'
import { Keyring } from '../../src/encryption/sealed-store.js'
import { createService, localMasterKey, manualClock, ServiceError } from '../../src/index.js'
import type { Store } from '../../src/store/contract.js'

const REVEAL = [
  {
    description: 'all',
    priority: 1,
    container: '/',
    transform: 'reveal' as const,
    permissions: ['token:create' as const, 'token:read' as const],
  },
]

/** A service over `store` with one tenant and a private key that reveals. */
async function vault(store: Store, masterKey?: Uint8Array | Uint8Array[]) {
  const service = createService({
    store,
    clock: manualClock('2030-01-01T00:00:00Z'),
    runner: null,
    ...(masterKey ? { masterKey } : {}),
  })
  const tenant = await service.admin.createTenant({ name: 't' })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'app',
    type: 'private',
    permissions: ['token:create', 'token:read'],
    rules: [{ ...REVEAL[0]!, container: '/general/' }],
  })
  return { service, tenant, key, client: service.connect(key) }
}

describe('data keys and the master key', () => {
  it('the memory store holds ciphertext too; the tenant record holds only the wrapped data key', async () => {
    const store = memoryStore()
    const { client, tenant } = await vault(store)
    expect(tenant).not.toHaveProperty('data_key')
    const made = await client.tokens.create({
      type: 'token',
      data: { pan: '4111111111111111' },
      mask: 'xxxx-1111',
    })
    expect((await client.tokens.get(made.id)).data).toEqual({ pan: '4111111111111111' })
    const dump = JSON.stringify(await store.dump())
    expect(dump).not.toContain('4111111111111111')
    expect(dump).not.toContain('xxxx-1111')
    expect((await store.getTenant(tenant.id))?.data_key).toEqual({
      key_id: expect.stringMatching(/^local:/),
      wrapped: expect.any(String),
    })
  })

  it('a ciphertext moved to another token does not decrypt: 422 `unreadable`, logged, nothing leaked', async () => {
    const store = memoryStore()
    const { service, client, key, tenant } = await vault(store)
    const a = await client.tokens.create({ type: 'token', data: 'secret-a' })
    const b = await client.tokens.create({ type: 'token', data: 'secret-b' })
    const rawA = await store.getToken(tenant.id, a.id)
    const rawB = await store.getToken(tenant.id, b.id)
    // An attacker with write access to the store swaps A's ciphertext into B.
    await store.write({ ops: [{ op: 'token.put', token: { ...rawB!, data: rawA!.data } }] })
    const error = await client.tokens.get(b.id).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ServiceError)
    expect((error as ServiceError).code).toBe('unreadable')
    expect((error as ServiceError).message).not.toContain('secret')
    const events: HttpLogEvent[] = []
    const handler = createHttpHandler(service, { log: (e) => events.push(e) })
    const response = await handler(
      new Request(`http://vault/tokens/${b.id}`, { headers: { 'svc-api-key': key } }),
    )
    expect(response.status).toBe(422)
    expect(await response.text()).not.toContain('secret-a')
    expect(events).toContainEqual(
      expect.objectContaining({ kind: 'request', status: 422, path: `/tokens/${b.id}` }),
    )
    // The same ciphertext in another tenant does not decrypt either.
    expect((await client.tokens.get(a.id)).data).toBe('secret-a')
  })

  it('a persistent store without a master key is refused, naming the option; a wrong key fails at start', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tokenvault-keys-'))
    try {
      const store = await fileStore({ path: dir })
      expect(() => createService({ store, clock: manualClock(), runner: null })).toThrow(
        /`masterKey` is required/,
      )
      const right = randomBytes(32)
      const { client } = await vault(store, right)
      const made = await client.tokens.create({ type: 'token', data: 'kept' })
      await store.close()

      const reopened = await fileStore({ path: dir })
      const wrong = createService({
        store: reopened,
        clock: manualClock(),
        runner: null,
        masterKey: randomBytes(32),
      })
      const failure = await wrong.admin.verifyMasterKey().catch((e: unknown) => e as Error)
      expect(failure).toBeInstanceOf(Error)
      expect(failure!.message).toMatch(/masterKey: .*master key local:[0-9a-f]+/)
      expect(failure!.message).not.toContain(right.toString('base64'))
      const ok = createService({ store: reopened, clock: manualClock(), runner: null, masterKey: right })
      await ok.admin.verifyMasterKey()
      expect(made.id).toBeTruthy()
      await reopened.close()
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('rotation under load: every token reads back, and the old key can be dropped after', async () => {
    const store = memoryStore()
    const oldKey = randomBytes(32)
    const newKey = randomBytes(32)
    const { service, key, tenant } = await vault(store, oldKey)
    const other = await service.admin.createTenant({ name: 'other' })
    const client = service.connect(key)
    const ids: string[] = []
    let stop = false
    /** Resolves once the load has written `n` tokens in all. */
    const waits: { n: number; resolve: () => void }[] = []
    const written = (n: number) => new Promise<void>((resolve) => waits.push({ n, resolve }))
    const load = (async () => {
      let n = 0
      while (!stop) {
        const made = await client.tokens.create({ type: 'token', data: { n } })
        ids.push(made.id)
        for (const w of waits.filter((w) => ids.length >= w.n)) w.resolve()
        expect((await client.tokens.get(made.id)).data).toEqual({ n })
        n++
        // The memory store answers in microtasks: let timers (and the rotation) run between calls.
        await new Promise((resolve) => setImmediate(resolve))
      }
    })()
    // Tokens written before, during and after the rotation.
    await written(10)
    const rotated = await service.admin.rotateMasterKey(newKey)
    expect(rotated).toEqual({ tenants: 2, keyId: localMasterKey(newKey).keyId })
    await written(ids.length + 10)
    stop = true
    await load
    expect(ids.length).toBeGreaterThanOrEqual(20)
    // A service with only the new key reads every token; one with only the old key can't.
    const fresh = createService({ store, clock: manualClock(), runner: null, masterKey: newKey })
    await fresh.admin.verifyMasterKey()
    const reader = fresh.connect(key)
    for (const [n, id] of ids.entries()) expect((await reader.tokens.get(id)).data).toEqual({ n })
    const stale = createService({ store, clock: manualClock(), runner: null, masterKey: oldKey })
    await expect(stale.admin.verifyMasterKey()).rejects.toThrow(/which this service was not given/)
    expect((await store.getTenant(other.id))?.data_key?.key_id).toBe(localMasterKey(newKey).keyId)
    expect((await store.getTenant(tenant.id))?.data_key?.key_id).toBe(localMasterKey(newKey).keyId)
  })

  it('keyed hashes (for fingerprints and search indexes) differ by tenant and purpose, and are stable', async () => {
    const store = memoryStore()
    const keyring = new Keyring(store, [localMasterKey(randomBytes(32))])
    const a = 'tenant-a'
    const b = 'tenant-b'
    for (const id of [a, b]) {
      await store.write({
        ops: [
          {
            op: 'tenant.put',
            tenant: {
              id,
              name: id,
              created_at: '2030-01-01T00:00:00.000Z',
              data_key: await keyring.newTenantKey(id),
            },
          },
        ],
      })
    }
    const h = await keyring.hmac(a, 'fingerprint', '4111111111111111')
    expect(h).toBe(await keyring.hmac(a, 'fingerprint', '4111111111111111'))
    expect(h).not.toBe(await keyring.hmac(b, 'fingerprint', '4111111111111111'))
    expect(h).not.toBe(await keyring.hmac(a, 'search', '4111111111111111'))
    expect(h).not.toContain('4111')
  })

  it('every seal draws a fresh IV, past the IV pool refills, and each opens only with its own AAD', () => {
    const key = tenantKey(randomBytes(32))
    const ivs = new Set<string>()
    for (let i = 0; i < 1000; i++) {
      const sealed = sealValue(key, { n: i }, `aad-${i}`)
      ivs.add(Buffer.from(sealed, 'base64').subarray(0, 12).toString('hex'))
      expect(openValue(key, sealed, `aad-${i}`)).toEqual({ n: i })
      expect(() => openValue(key, sealed, `aad-${i + 1}`)).toThrow()
    }
    expect(ivs.size).toBe(1000)
    const other = tenantKey(randomBytes(32))
    expect(() => openValue(other, sealValue(key, 'x', 'a'), 'a')).toThrow()
  })
})
