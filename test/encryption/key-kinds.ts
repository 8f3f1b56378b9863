/**
 * Every sealed record kind after a data-key rotation, the re-encryption sweep and the retirement of
 * the old version (its key leaves the tenant record, so nothing sealed under it opens again): the
 * record still reads, and no record of the tenant is left under the old version. Shared by the
 * memory and file store tests (`key-kinds.test.ts`) and PostgreSQL's (`test/postgres/key-kinds.test.ts`).
 */
import { randomBytes } from 'node:crypto'
import { expect } from 'vitest'
import { createService, manualClock } from '../../entry/index.js'
import { Keyring, toProvider } from '../../src/encryption/index.js'
import { sealedVersion } from '../../src/encryption/keyring.js'
import { openOutbox, outboxVersions, sealOutbox } from '../../src/encryption/outbox-sealing.js'
import { openReactor, type Sealing, sealedPayload, sealReactor } from '../../src/encryption/sealing.js'
import type { OutboxEntry, Reactor } from '../../src/kernel/index.js'
import type { Store } from '../../src/store/contract.js'

/** The version a sealed field is under, `undefined` when it is not sealed. */
const versionOf = (value: unknown) => {
  const payload = sealedPayload(value)
  return payload === undefined ? undefined : sealedVersion(payload)
}

/** The versions the tenant's stored token data and proxy configurations are sealed under, by kind. */
export async function storedVersions(store: Store, tenantId: string) {
  const dump = await store.dump()
  return {
    tokens: dump.tokens.filter((t) => t.tenant_id === tenantId).map((t) => versionOf(t.data)),
    proxies: dump.proxies.filter((p) => p.tenant_id === tenantId).map((p) => versionOf(p.configuration)),
    outbox: dump.outbox.filter((e) => e.tenant_id === tenantId).flatMap(outboxVersions),
    reactors: dump.reactors.filter((r) => r.tenant_id === tenantId).map((r) => versionOf(r.configuration)),
  }
}

/** Sealing over a keyring of its own on `store` (what another process of the vault would hold). */
function sealingOn(store: Store, masterKey: Uint8Array): Sealing {
  const keyring = new Keyring(store, [toProvider(masterKey)])
  return {
    keyOf: (t, v) => keyring.keyFor(t, v),
    sealKeyOf: (t) => keyring.sealKey(t),
    searchIndexPurpose: 'search-index',
    asRead: (t) => t,
  }
}

/** A reactor of `tenantId` with code of its own and a secret in its configuration. */
const reactorOf = (tenantId: string): Reactor => ({
  id: 'reactor-1',
  tenant_id: tenantId,
  name: 'r',
  code: 'module.exports = async () => ({ raw: {} })',
  configuration: { API_KEY: 'reactor-secret' },
  created_at: '2030-01-01T00:00:00.000Z',
  created_by: 'test',
})

/** A delivered callback entry of `tenantId` (not due: nothing dispatches it) holding a secret in its body. */
const callbackEntry = (tenantId: string): OutboxEntry => ({
  tenant_id: tenantId,
  id: 'callback-entry-1',
  kind: 'callback',
  url: 'https://callback.example.test/',
  body: JSON.stringify({ secret: 'outbox-secret' }),
  created_at: '2030-01-01T00:00:00.000Z',
  state: 'delivered',
  attempts: [],
})

/** Runs the scenario on `store` (a fresh one): rotate, re-encrypt, retire; then every kind reads. */
export async function everyKindResealed(store: Store): Promise<void> {
  const clock = manualClock('2030-01-01T00:00:00Z')
  const masterKey = randomBytes(32)
  const service = createService({ store, clock, runner: null, masterKey })
  try {
    const tenant = await service.admin.createTenant({ name: 't' })
    const { key } = await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'm',
      type: 'private',
      permissions: ['token:create', 'token:read'],
      rules: [
        {
          description: 'all',
          priority: 1,
          container: '/',
          transform: 'reveal',
          permissions: ['token:create', 'token:read'],
        },
      ],
    })
    const client = service.connect(key)
    const management = await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'p',
      type: 'management',
      permissions: ['proxy:create', 'proxy:read'],
    })
    const admin = service.connect(management.key)
    const token = await client.tokens.create({ type: 'token', data: { n: 1 } })
    const proxies = []
    for (let i = 0; i < 3; i++) {
      proxies.push(
        await admin.proxies.create({
          name: `p${i}`,
          destination_url: 'https://api.example.test',
          configuration: { SECRET: `secret-${i}` },
        }),
      )
    }
    const entry = callbackEntry(tenant.id)
    const reactor = reactorOf(tenant.id)
    const other = sealingOn(store, masterKey)
    await store.write({
      ops: [
        { op: 'outbox.put', entry: await sealOutbox(other, entry) },
        { op: 'reactor.put', reactor: await sealReactor(other, reactor) },
      ],
    })
    const before = { tokens: [1], proxies: [1, 1, 1], outbox: [1], reactors: [1] }
    expect(await storedVersions(store, tenant.id)).toEqual(before)

    await service.admin.rotateDataKey({ tenantId: tenant.id })
    // Late enough after the rotation that no process may still seal under version 1: the pass retires it.
    clock.advance(60_000)
    const progress = await service.admin.reencrypt({ tenantId: tenant.id, batchSize: 10 })
    expect(progress.finished).toBe(true)
    expect(progress.versions).toEqual([2])

    const after = { tokens: [2], proxies: [2, 2, 2], outbox: [2], reactors: [2] }
    expect(await storedVersions(store, tenant.id)).toEqual(after)
    expect((await client.tokens.get(token.id)).data).toEqual({ n: 1 })
    for (const [i, p] of proxies.entries())
      expect((await admin.proxies.get(p.id)).configuration).toEqual({ SECRET: `secret-${i}` })
    // A process that reads the keys now holds version 2 alone, and opens the entry.
    const dump = await store.dump()
    const fresh = sealingOn(store, masterKey)
    expect((await openOutbox(fresh, dump.outbox.find((e) => e.id === entry.id)!)).body).toBe(entry.body)
    const storedReactor = dump.reactors.find((r) => r.id === reactor.id)!
    expect((await openReactor(fresh, storedReactor)).configuration).toEqual(reactor.configuration)
  } finally {
    await service.close()
  }
}
