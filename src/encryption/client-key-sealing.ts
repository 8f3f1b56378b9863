import type { StoredClientKey } from '../kernel/index.js'
import { ServiceError } from '../kernel/index.js'
import type { Op, Range, Store } from '../store/index.js'
import { openValue, sealedVersion, sealValue } from './keyring.js'
import type { Sealing } from './sealing.js'

/** The additional authenticated data of a client key's sealed private key: its tenant and id. */
const clientKeyAad = (k: { tenant_id: string; id: string }) =>
  `tokenvault:client-key:v1:${k.tenant_id}:${k.id}`

/** The mark a sealed private key carries in `private_key` (a plain one is base64url: never `$`). */
const SEALED = '$sealed:'

/** A client key as stored: its private key sealed under the tenant's data key, bound to its tenant and id. */
export async function sealClientKey(s: Sealing, key: StoredClientKey): Promise<StoredClientKey> {
  if (key.private_key.startsWith(SEALED)) return key
  const sealed = sealValue(await s.sealKeyOf(key.tenant_id), key.private_key, clientKeyAad(key))
  return { ...key, private_key: `${SEALED}${sealed}` }
}

/**
 * A stored client key opened; one whose private key fails its integrity check is `unreadable`
 * (the message names the key, never its bytes).
 */
export async function openClientKey(s: Sealing, key: StoredClientKey): Promise<StoredClientKey> {
  if (!key.private_key.startsWith(SEALED)) return key
  const payload = key.private_key.slice(SEALED.length)
  let opened: unknown
  try {
    opened = openValue(await s.keyOf(key.tenant_id, sealedVersion(payload)), payload, clientKeyAad(key))
  } catch {
    opened = undefined
  }
  if (typeof opened !== 'string')
    throw new ServiceError(
      'unreadable',
      `the stored private key of client encryption key ${key.id} fails its integrity check and can't be read`,
    )
  return { ...key, private_key: opened }
}

/** `ops` with each client key's private key sealed (`sealClientKey`); the other ops as they are. */
export function sealClientKeyOps(s: Sealing, ops: readonly Op[]): Promise<Op[]> {
  return Promise.all(
    ops.map((op) =>
      op.op === 'client_key.put' ? sealClientKey(s, op.key).then((key) => ({ ...op, key })) : op,
    ),
  )
}

/** The sealed store's client key reads: each key read from `inner` opened. */
export function openedClientKeyReads(s: Sealing, inner: Pick<Store, 'getClientKey' | 'listClientKeys'>) {
  return {
    async getClientKey(tenantId: string, id: string) {
      const key = await inner.getClientKey(tenantId, id)
      return key && openClientKey(s, key)
    },
    async listClientKeys(tenantId: string, range: Range) {
      const page = await inner.listClientKeys(tenantId, range)
      return { ...page, items: await Promise.all(page.items.map((k) => openClientKey(s, k))) }
    },
  }
}

/**
 * The data-key versions the tenant's client keys are sealed under: a rotation keeps them (client
 * keys are not re-sealed), so a key stays readable until it expires or is deleted.
 */
export async function clientKeyVersions(
  store: Pick<Store, 'listClientKeys'>,
  tenantId: string,
): Promise<number[]> {
  const page = await store.listClientKeys(tenantId, { offset: 0, limit: 1000 })
  return page.items
    .filter((k) => k.private_key.startsWith(SEALED))
    .map((k) => sealedVersion(k.private_key.slice(SEALED.length)))
}
