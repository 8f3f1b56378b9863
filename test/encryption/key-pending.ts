/**
 * Records that are acknowledged but not yet final — a kept idempotency answer, a transaction's
 * staged writes — across a data-key rotation, the re-encryption sweep and the retirement of the
 * old version: the replay answers the first answer, the staged writes read and commit, and no
 * record of the tenant is left under the old version. Shared by the memory and file store tests
 * (`key-pending.test.ts`) and PostgreSQL's (`test/postgres/key-pending.test.ts`).
 */
import { randomBytes } from 'node:crypto'
import { expect } from 'vitest'
import { createService, manualClock } from '../../entry/index.js'
import { sealedVersion } from '../../src/encryption/keyring.js'
import { sealedPayload } from '../../src/encryption/sealing.js'
import type { Store } from '../../src/store/contract.js'

/** The versions the tenant's kept answers and staged tokens are sealed under, by kind. */
export async function pendingVersions(store: Store, tenantId: string) {
  const dump = await store.dump()
  const versionOf = (value: unknown) => {
    const payload = typeof value === 'string' ? value : sealedPayload(value)
    return payload === undefined ? undefined : sealedVersion(payload)
  }
  return {
    answers: dump.idempotency.filter((r) => r.tenant_id === tenantId).map((r) => versionOf(r.answer)),
    staged: dump.staged.filter((w) => w.tenant_id === tenantId).map((w) => versionOf(w.token?.data)),
    intents: dump.token_intents.filter((i) => i.tenant_id === tenantId).map((i) => versionOf(i.data)),
  }
}

/** A service over `store` with one tenant and an application that creates and reads tokens. */
async function vaultOn(store: Store) {
  const clock = manualClock('2030-01-01T00:00:00Z')
  const service = createService({ store, clock, runner: null, masterKey: randomBytes(32) })
  const tenant = await service.admin.createTenant({ name: 't' })
  const app = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'm',
    type: 'private',
    permissions: ['token:create', 'token:read', 'token:update', 'token-intent:create'],
    rules: [
      {
        description: 'all',
        priority: 1,
        container: '/',
        transform: 'reveal',
        permissions: ['token:create', 'token:read', 'token:update'],
      },
    ],
  })
  return { clock, service, tenantId: tenant.id, key: app.key }
}

/**
 * An idempotent create answered before the rotation, and a transaction that staged a create and an
 * update before it: after the rotation, a whole pass and the retirement of version 1 (the pass
 * began late enough to retire it), the create's repeat answers the first answer and makes no
 * second token, the staged writes read inside the transaction and commit, and nothing of the
 * tenant is left sealed under version 1.
 */
export async function pendingResealed(store: Store): Promise<void> {
  const { clock, service, tenantId, key } = await vaultOn(store)
  try {
    const client = service.connect(key)
    const once = service.connect(key, { idempotencyKey: 'create-before-rotation' })
    const request = { type: 'token', data: { secret: 'kept answer' } }
    const first = await once.tokens.create(request)
    const committed = await client.tokens.create({ id: 'committed', type: 'token', data: 'old value' })

    const tx = await client.transactions.create()
    const inTx = service.connect(key, { transactionId: tx.id })
    await inTx.tokens.create({ id: 'staged-create', type: 'token', data: { staged: 1 } })
    await inTx.tokens.update(committed.id, { data: 'staged value' })
    const intent = await client.tokenIntents.create({ type: 'token', data: { intended: 1 } })
    expect(await pendingVersions(store, tenantId)).toEqual({ answers: [1], staged: [1, 1], intents: [1] })

    await service.admin.rotateDataKey({ tenantId })
    clock.advance(60_000)
    const progress = await service.admin.reencrypt({ tenantId, batchSize: 10 })
    expect(progress.finished).toBe(true)
    expect(progress.versions).toEqual([2])
    expect(await pendingVersions(store, tenantId)).toEqual({ answers: [2], staged: [2, 2], intents: [2] })
    // Resealed, the staged create is still marked new to the store; the staged update is not.
    const marks = (await store.dump()).staged
      .filter((w) => w.tenant_id === tenantId)
      .map((w) => `${w.token_id} ${w.creates ?? false}`)
    expect(marks.sort()).toEqual([`${committed.id} false`, 'staged-create true'])

    // The repeat answers the first answer and acts once.
    expect(await once.tokens.create(request)).toEqual(first)
    const tokens = (await store.dump()).tokens.filter((t) => t.tenant_id === tenantId)
    expect(tokens).toHaveLength(2)
    // The intent converts into a token holding its data.
    const converted = await client.tokens.create({ token_intent_id: intent.id })
    expect((await client.tokens.get(converted.id)).data).toEqual({ intended: 1 })
    // The staged writes read inside the transaction, and commit.
    expect((await inTx.tokens.get('staged-create')).data).toEqual({ staged: 1 })
    expect((await inTx.tokens.get(committed.id)).data).toBe('staged value')
    await client.transactions.commit(tx.id)
    expect((await client.tokens.get('staged-create')).data).toEqual({ staged: 1 })
    expect((await client.tokens.get(committed.id)).data).toBe('staged value')
  } finally {
    await service.close()
  }
}
