import type { Ctx } from '../call/index.js'
import { expectWritten } from '../call/index.js'
import type { StoredApplication, StoredApplicationKey } from '../kernel/index.js'
import { invalid, newApiKey, newId, notFound, sha256 } from '../kernel/index.js'
import { applicationKeyHashes } from '../store/index.js'
import { requirePermission } from './access.js'

/** How many keys one application may hold at once. */
export const MAX_APPLICATION_KEYS = 100

/** An application key as shown: never its hash; `key` (the plaintext) only in the answer of create. */
export interface ApplicationKey {
  id: string
  key?: string
  created_at: string
  created_by?: string
}

/** The keys an application holds, as records (a legacy record's one key gets the application's id). */
function keysOf(application: StoredApplication): StoredApplicationKey[] {
  if (application.keys) return application.keys
  return applicationKeyHashes(application).map((key_hash) => ({
    id: application.id,
    key_hash,
    created_at: application.created_at,
    ...(application.created_by ? { created_by: application.created_by } : {}),
  }))
}

const shown = (k: StoredApplicationKey): ApplicationKey => ({
  id: k.id,
  created_at: k.created_at,
  ...(k.created_by ? { created_by: k.created_by } : {}),
})

/**
 * Application keys (`/applications/{id}/keys`): an application may hold several keys, each an API
 * key acting as the application; create (`application:create`) answers the plaintext key once, list
 * and get (`application:read`) never show it, delete (`application:delete`) stops the key at once.
 * Adding or deleting a key is a compare-and-set on the application record (`application.unchanged`),
 * so concurrent changes never lose one: the loser answers 409.
 */
export function applicationKeyOperations(ctx: Ctx) {
  const tenant = () => ctx.principal.tenantId
  const mustGet = async (id: unknown) => {
    const a = typeof id === 'string' ? await ctx.store.getApplication(tenant(), id) : null
    if (!a) throw notFound('application')
    return a
  }
  const replaceKeys = async (current: StoredApplication, keys: StoredApplicationKey[]) => {
    const { key_hash: _legacy, ...rest } = current
    const next: StoredApplication = { ...rest, keys }
    expectWritten(
      await ctx.store.write({
        checks: [
          { check: 'application.unchanged', tenant_id: tenant(), id: current.id, application: current },
        ],
        ops: [{ op: 'application.put', application: next }],
      }),
    )
  }

  return {
    /** Creates a new key for the application; the answer carries the key, which is never shown again. */
    async create(applicationId: string): Promise<ApplicationKey> {
      requirePermission(ctx.principal, 'application:create')
      const current = await mustGet(applicationId)
      const keys = keysOf(current)
      if (keys.length >= MAX_APPLICATION_KEYS) {
        throw invalid('keys', `an application holds at most ${MAX_APPLICATION_KEYS} keys`)
      }
      const key = newApiKey()
      const record: StoredApplicationKey = {
        id: newId(),
        key_hash: sha256(key),
        created_at: ctx.now(),
        created_by: ctx.principal.id,
      }
      await replaceKeys(current, [...keys, record])
      return { id: record.id, key, created_at: record.created_at, created_by: ctx.principal.id }
    },

    /** Every key of the application, oldest first, without the keys themselves. */
    async list(applicationId: string): Promise<ApplicationKey[]> {
      requirePermission(ctx.principal, 'application:read')
      return keysOf(await mustGet(applicationId)).map(shown)
    },

    async get(applicationId: string, keyId: string): Promise<ApplicationKey> {
      requirePermission(ctx.principal, 'application:read')
      const found = keysOf(await mustGet(applicationId)).find((k) => k.id === keyId)
      if (!found) throw notFound('application key')
      return shown(found)
    },

    /** Deletes one key of the application: requests with it answer 401 from then on. */
    async delete(applicationId: string, keyId: string): Promise<void> {
      requirePermission(ctx.principal, 'application:delete')
      const current = await mustGet(applicationId)
      const keys = keysOf(current)
      if (!keys.some((k) => k.id === keyId)) throw notFound('application key')
      await replaceKeys(
        current,
        keys.filter((k) => k.id !== keyId),
      )
    },
  }
}
