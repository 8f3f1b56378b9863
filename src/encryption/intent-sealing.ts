import type { Json, StoredTokenIntent } from '../kernel/index.js'
import { ServiceError } from '../kernel/index.js'
import { openValue, sealedVersion, sealValue } from './keyring.js'
import { type Sealing, sealedPayload } from './sealing.js'

/** The additional authenticated data of a token intent's sealed data: its tenant and id. */
const intentAad = (i: { tenant_id: string; id: string }) =>
  `tokenvault:token-intent:v1:${i.tenant_id}:${i.id}`

/** A token intent as stored: its data sealed under its tenant's key, bound to its tenant and id. */
export async function sealTokenIntent(s: Sealing, intent: StoredTokenIntent): Promise<StoredTokenIntent> {
  const key = await s.sealKeyOf(intent.tenant_id)
  return { ...intent, data: { $sealed: sealValue(key, intent.data, intentAad(intent)) } as unknown as Json }
}

/** A stored token intent opened; one whose data fails its integrity check is `unreadable`. */
export async function openTokenIntent(s: Sealing, intent: StoredTokenIntent): Promise<StoredTokenIntent> {
  const payload = sealedPayload(intent.data)
  if (payload === undefined) return intent
  try {
    const data = openValue(
      await s.keyOf(intent.tenant_id, sealedVersion(payload)),
      payload,
      intentAad(intent),
    )
    return { ...intent, data: data as Json }
  } catch {
    throw new ServiceError(
      'unreadable',
      `the stored data of token intent ${intent.id} fails its integrity check and can't be read`,
    )
  }
}
