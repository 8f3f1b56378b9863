import type { StoredToken } from '../../src/kernel/types.js'
import { TIMES } from '../../testing/store/arbitraries.js'

/** A card token of `tenant` made at the first of the arbitrary times, its fingerprint its own. */
export const cardToken = (tenant: string, id: string, extra: Partial<StoredToken> = {}): StoredToken => ({
  id,
  tenant_id: tenant,
  type: 'card',
  data: { n: id },
  containers: ['/pci/high/'],
  metadata: {},
  fingerprint: `fp-${id}`,
  created_by: 'a',
  created_at: TIMES[0]!,
  ...extra,
})
