import { ServiceError, sha256 } from '../kernel/index.js'
import type { Store } from '../store/index.js'
import type { Principal } from './access.js'

/** A principal that has not been authorized yet holds nothing: every operation answers 403. */
const NOTHING = { permissions: [], rules: undefined } as const

/** The hash under which `apiKey` is stored, or null for something that can't be a key. */
export function hashApiKey(apiKey: unknown): string | null {
  if (typeof apiKey !== 'string' || apiKey.length === 0 || apiKey.length > 200) return null
  return sha256(apiKey)
}

/**
 * Finds who holds the key hashing to `keyHash` (from `hashApiKey`) at `now` (the call's instant): an
 * application, or a session. An expired session is deleted and
 * answers `unauthenticated`, like an unknown key; a session not yet authorized holds nothing.
 */
export async function authenticate(store: Store, now: string, keyHash: string | null): Promise<Principal> {
  if (keyHash === null) throw new ServiceError('unauthenticated', 'an API key is required')
  const owner = await store.findKey(keyHash)
  if (!owner) throw new ServiceError('unauthenticated', 'the API key is not valid')
  if (owner.kind === 'application') {
    const { application: a } = owner
    // Past its expires_at an application is gone, whether or not the sweep has deleted it yet.
    if (a.expires_at !== undefined && a.expires_at <= now) {
      throw new ServiceError('unauthenticated', 'the application has expired')
    }
    return {
      tenantId: a.tenant_id,
      id: a.id,
      kind: 'application',
      type: a.type,
      permissions: a.permissions,
      rules: a.rules,
      ...(a.expires_at === undefined ? {} : { expiresAt: a.expires_at }),
    }
  }
  const { session: s } = owner
  if (s.expires_at <= now) {
    await store.write({ ops: [{ op: 'session.delete', tenant_id: s.tenant_id, id: s.id }] })
    throw new ServiceError('unauthenticated', 'the session has expired')
  }
  const grant = s.state === 'authorized' ? { permissions: s.permissions, rules: s.rules } : NOTHING
  return {
    tenantId: s.tenant_id,
    id: s.id,
    kind: 'session',
    type: 'public',
    expiresAt: s.expires_at,
    ...grant,
  }
}
