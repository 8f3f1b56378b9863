import type { StoredApplication, StoredSession } from '../kernel/index.js'
import { ServiceError, sha256 } from '../kernel/index.js'
import type { Store } from '../store/index.js'
import { applicationKeyHashes } from '../store/index.js'
import { grantExcess, type Principal } from './access.js'

/** A principal that has not been authorized yet holds nothing: every operation answers 403. */
const NOTHING = { permissions: [], rules: undefined } as const

/** The hash under which `apiKey` is stored, or null for something that can't be a key. */
export function hashApiKey(apiKey: unknown): string | null {
  if (typeof apiKey !== 'string' || apiKey.length === 0 || apiKey.length > 200) return null
  return sha256(apiKey)
}

/**
 * Finds who holds the key hashing to `keyHash` (from `hashApiKey`) at `now` (the call's instant): an
 * application, or a session. An expired session is deleted and answers `unauthenticated`, like an
 * unknown key; a session not yet authorized holds nothing; an authorized one holds its grant only
 * while the application that authorized it holds the key it authorized with (`authorizerOf`).
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
      keyHash,
      ...(a.expires_at === undefined ? {} : { expiresAt: a.expires_at }),
    }
  }
  const { session: s } = owner
  const gone = async (why: string) => {
    await store.write({ ops: [{ op: 'session.delete', tenant_id: s.tenant_id, id: s.id }] })
    return new ServiceError('unauthenticated', why)
  }
  if (s.expires_at <= now) throw await gone('the session has expired')
  if (s.state !== 'authorized') return sessionPrincipal(s, NOTHING, s.expires_at)
  const authorizer = await authorizerOf(store, s, now)
  if (!authorizer)
    throw await gone(
      'the key that authorized the session no longer stands behind it (deleted, expired or narrowed)',
    )
  const ends = authorizer.expires_at !== undefined && authorizer.expires_at < s.expires_at
  return sessionPrincipal(
    s,
    { permissions: s.permissions, rules: s.rules },
    ends ? authorizer.expires_at! : s.expires_at,
  )
}

/**
 * The application that authorized session `s`, while it still stands behind it: it exists, has not
 * expired, still holds the key it authorized with, and still holds what it granted. Otherwise
 * null: deleting or expiring the application, deleting or regenerating that key, or narrowing its
 * permissions ends the sessions it authorized — a revoked key leaves nothing behind that outlives
 * it (a session may be authorized to live for years).
 */
async function authorizerOf(store: Store, s: StoredSession, now: string): Promise<StoredApplication | null> {
  if (s.authorized_by === undefined) return null
  const a = await store.getApplication(s.tenant_id, s.authorized_by)
  if (!a || (a.expires_at !== undefined && a.expires_at <= now)) return null
  if (s.authorized_by_key_hash !== undefined && !applicationKeyHashes(a).includes(s.authorized_by_key_hash))
    return null
  // Its permissions narrowed since: a session never holds more than its authorizer holds now.
  if (grantExcess(a, { permissions: s.permissions, rules: s.rules ?? [] }) !== null) return null
  return a
}

/** A session's principal with `grant`, its key working until `expiresAt`. */
function sessionPrincipal(
  s: StoredSession,
  grant: Pick<Principal, 'permissions' | 'rules'>,
  expiresAt: string,
): Principal {
  return { tenantId: s.tenant_id, id: s.id, kind: 'session', type: 'public', expiresAt, ...grant }
}
