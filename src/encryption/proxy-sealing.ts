import type { StoredProxy } from '../kernel/index.js'
import { ServiceError } from '../kernel/index.js'
import { openValue, sealedVersion, sealValue } from './keyring.js'
import { type Sealing, sealedPayload } from './sealing.js'

/** The additional authenticated data of a proxy's sealed configuration: its tenant and id. */
const proxyAad = (p: { tenant_id: string; id: string }) => `tokenvault:proxy:v1:${p.tenant_id}:${p.id}`

/** The error an unreadable proxy configuration answers with: it names the proxy, never its bytes. */
const unreadable = (id: string) =>
  new ServiceError(
    'unreadable',
    `the stored configuration of proxy ${id} fails its integrity check and can't be read`,
  )

/** A proxy as stored: its configuration sealed (names and values in one ciphertext), bound to its tenant and id. */
export async function sealProxy(s: Sealing, proxy: StoredProxy): Promise<StoredProxy> {
  const key = await s.sealKeyOf(proxy.tenant_id)
  const sealed = { $sealed: sealValue(key, proxy.configuration, proxyAad(proxy)) }
  return { ...proxy, configuration: sealed as unknown as StoredProxy['configuration'] }
}

/** A stored proxy opened; one whose configuration fails its integrity check is `unreadable`. */
export async function openProxy(s: Sealing, proxy: StoredProxy): Promise<StoredProxy> {
  const payload = sealedPayload(proxy.configuration)
  if (payload === undefined) return proxy
  let configuration: unknown
  try {
    configuration = openValue(
      await s.keyOf(proxy.tenant_id, sealedVersion(payload)),
      payload,
      proxyAad(proxy),
    )
  } catch {
    throw unreadable(proxy.id)
  }
  if (configuration === null || typeof configuration !== 'object' || Array.isArray(configuration))
    throw unreadable(proxy.id)
  return { ...proxy, configuration: configuration as StoredProxy['configuration'] }
}
