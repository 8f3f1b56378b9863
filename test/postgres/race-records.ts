import type { StagedWrite, StoredSession, StoredToken, StoredTransaction } from '../../src/types.js'

/** The tenant of the cross-process race. */
export const T = 'race-tenant'
const NOW = '2030-01-01T00:00:00.000Z'

/** The pending session of round `round`, with `extra` on top. */
export const raceSession = (round: number, extra: Partial<StoredSession> = {}): StoredSession => ({
  id: `session-${round}`,
  tenant_id: T,
  application_id: 'public-app',
  key_hash: `key-${round}`,
  nonce_hash: `nonce-${round}`,
  state: 'created',
  permissions: ['token:read'],
  created_at: NOW,
  expires_at: '2030-01-01T00:03:00.000Z',
  ...extra,
})

/** A token `id`, tagged with who wrote it. */
export const raceToken = (id: string, by: string): StoredToken => ({
  id,
  tenant_id: T,
  type: 'token',
  data: { by },
  containers: ['/general/high/'],
  metadata: { by },
  created_by: by,
  created_at: NOW,
})

/** The open transaction of round `round`, with one staged write and its lock. */
export const raceTransaction = (round: number): StoredTransaction => ({
  id: `tx-${round}`,
  tenant_id: T,
  created_at: NOW,
  created_by: 'app',
  expires_at: '2030-01-01T01:00:00.000Z',
  state: 'open',
  version: 1,
})

/** The one staged record of round `round`'s transaction: a token it creates. */
export const raceStaged = (round: number): StagedWrite => ({
  tenant_id: T,
  transaction_id: `tx-${round}`,
  token_id: `staged-${round}`,
  seq: 1,
  token: raceToken(`staged-${round}`, 'app'),
})
