import type {
  StoredApplication,
  StoredFormula,
  StoredSession,
  StoredToken,
  StoredTransaction,
} from '../../src/kernel/index.js'
import type { Op } from '../../src/store/index.js'

/**
 * Records the store conformance suite builds on (and the state and file store tests). No
 * test-runner import: child processes of the crash tests load it too.
 */

export const T = 'tenant-a'
export const U = 'tenant-b'
export const NOW = '2030-01-01T00:00:00.000Z'
export const LATER = '2030-01-01T02:00:00.000Z'

/** A token of tenant `T` (or as `extra` says). */
export const token = (id: string, extra: Partial<StoredToken> = {}): StoredToken => ({
  id,
  tenant_id: T,
  type: 'token',
  data: { value: id },
  containers: ['/general/high/'],
  metadata: {},
  created_by: 'app-1',
  created_at: NOW,
  ...extra,
})

/** An open transaction of tenant `T` expiring an hour after `NOW` (or as `extra` says). */
export const tx = (id: string, extra: Partial<StoredTransaction> = {}): StoredTransaction => ({
  id,
  tenant_id: T,
  created_at: NOW,
  created_by: 'app-1',
  expires_at: '2030-01-01T01:00:00.000Z',
  state: 'open',
  version: 0,
  ...extra,
})

/** A created session of tenant `T` whose key and nonce hashes derive from `id`. */
export const session = (id: string, extra: Partial<StoredSession> = {}): StoredSession => ({
  id,
  tenant_id: T,
  application_id: 'pub-1',
  key_hash: `key-${id}`,
  nonce_hash: `nonce-${id}`,
  state: 'created',
  permissions: [],
  created_at: NOW,
  expires_at: '2030-01-01T00:03:00.000Z',
  ...extra,
})
/** A verified formula: private to `tenant`, or official when `tenant` is null. */
export const formula = (id: string, name: string, tenant: string | null = T): StoredFormula => ({
  id,
  tenant_id: tenant,
  name,
  type: tenant === null ? 'official' : 'private',
  status: 'verified',
  code: 'module.exports = async () => ({})',
  configuration: [],
  request_parameters: [],
  created_at: NOW,
})
/** A private application of `tenant` whose key hash derives from `id`. */
export const app = (id: string, tenant = T): StoredApplication => ({
  id,
  tenant_id: tenant,
  name: id,
  type: 'private',
  permissions: ['token:read'],
  created_at: NOW,
  key_hash: `hash-${id}`,
})

/** Puts the lock record that makes transaction `txId` (of `tenant`, default `T`) hold token `id`. */
export const lock = (id: string, txId: string, expires_at = '2030-01-01T01:00:00.000Z', tenant = T): Op => ({
  op: 'lock.put',
  lock: { tenant_id: tenant, token_id: id, transaction_id: txId, expires_at },
})

/** Deletes the lock record of token `id` (of `tenant`, default `T`). */
export const unlock = (id: string, tenant = T): Op => ({ op: 'lock.delete', tenant_id: tenant, token_id: id })

/**
 * Puts the staged record of token `id` in transaction `txId` (of `tenant`, default `T`): `token` as
 * staged, or null (staged deleted), at `seq` (default 1).
 */
export const stage = (txId: string, id: string, token: StoredToken | null, seq = 1, tenant = T): Op => ({
  op: 'staged.put',
  staged: { tenant_id: tenant, transaction_id: txId, token_id: id, seq, token },
})

/** Deletes the staged record of token `id` in transaction `txId` (of `tenant`, default `T`). */
export const unstage = (txId: string, id: string, tenant = T): Op => ({
  op: 'staged.delete',
  tenant_id: tenant,
  transaction_id: txId,
  token_id: id,
})

/** Puts a token. */
export const put = (t: StoredToken): Op => ({ op: 'token.put', token: t })

/** Links `child` under `parent` in `tenant` (default `T`). */
export const link = (parent: string, child: string, tenant = T): Op => ({
  op: 'association.put',
  association: { tenant_id: tenant, parent_id: parent, child_id: child, created_at: NOW },
})
