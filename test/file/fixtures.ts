import type { Op, StoredToken, StoredTransaction } from '../../src/types.js'

/** Records for the file store tests (no test-runner imports: the child process uses them too). */

export const T = 'tenant-a'
export const NOW = '2030-01-01T00:00:00.000Z'

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

export const put = (id: string, extra: Partial<StoredToken> = {}): Op => ({
  op: 'token.put',
  token: token(id, extra),
})

export const link = (parent: string, child: string): Op => ({
  op: 'association.put',
  association: { tenant_id: T, parent_id: parent, child_id: child, created_at: NOW },
})

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

export const stage = (txId: string, writes: Op[], locks: string[]): Op => ({
  op: 'transaction.stage',
  tenant_id: T,
  id: txId,
  writes,
  locks,
})
