import type { StoredToken } from '../../src/kernel/types.js'
import type { Op } from '../../src/store/index.js'
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
