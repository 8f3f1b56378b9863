import type { LegacyOp, Op, StoredToken } from '../../src/types.js'
import { NOW, T, token } from '../records.js'

export { NOW, T, token, tx } from '../records.js'

/** Records for the file store tests (no test-runner imports: the child process uses them too). */

export const put = (id: string, extra: Partial<StoredToken> = {}): Op => ({
  op: 'token.put',
  token: token(id, extra),
})

export const link = (parent: string, child: string): Op => ({
  op: 'association.put',
  association: { tenant_id: T, parent_id: parent, child_id: child, created_at: NOW },
})

/**
 * A `transaction.stage` op as earlier versions journaled it (the core now stages with
 * `transaction.put`): the file store must still take and replay it.
 */
export const stage = (txId: string, writes: Op[], locks: string[]): Op =>
  ({ op: 'transaction.stage', tenant_id: T, id: txId, writes, locks }) satisfies LegacyOp as unknown as Op
