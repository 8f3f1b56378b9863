import type { StoredToken, StoredTransaction } from '../../src/types.js'

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
  writes: [],
  locks: [],
  ...extra,
})
