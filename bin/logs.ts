import { createService, systemClock } from '../entry/index.js'
import type { LogVerification } from '../src/audit/index.js'
import { openStore } from './stores.js'

/** Options of `verifyStoreLogs` (`tokenvault logs verify`). */
export interface LogsVerifyOptions {
  /** A `--store` value. */
  store: string
  masterKey?: Uint8Array
  /** The tenant to verify; default: every tenant of the store. */
  tenant?: string
}

/**
 * Verifies the audit log of `tenant` (or of every tenant) of a store: each entry's MAC under the
 * tenant's audit key, and each chain without a gap. Answers one result per tenant; the first broken
 * link of a tenant is in its `broken`.
 */
export async function verifyStoreLogs(
  options: LogsVerifyOptions,
): Promise<{ tenantId: string; result: LogVerification }[]> {
  const opened = await openStore(options.store)
  const service = createService({
    store: opened.store,
    clock: systemClock,
    runner: null,
    ...(options.masterKey ? { masterKey: options.masterKey } : {}),
  })
  try {
    const tenants = (await opened.store.listTenants()).map((t) => t.id)
    if (options.tenant !== undefined && !tenants.includes(options.tenant)) {
      throw new Error(`--tenant: the store holds no tenant ${options.tenant}`)
    }
    const out: { tenantId: string; result: LogVerification }[] = []
    for (const tenantId of options.tenant === undefined ? tenants : [options.tenant]) {
      out.push({ tenantId, result: await service.admin.verifyLogs({ tenantId }) })
    }
    return out
  } finally {
    await service.close()
    await opened.release()
  }
}

/** One line per tenant: `ok` with what was checked, or the first broken link. */
export function verificationLine({
  tenantId,
  result,
}: {
  tenantId: string
  result: LogVerification
}): string {
  if (result.ok) return `tenant ${tenantId}: ok, ${result.entries} entries in ${result.lanes} chains`
  const b = result.broken!
  const expected = b.expected === undefined ? '' : ` (expected seq ${b.expected})`
  return `tenant ${tenantId}: BROKEN at entry ${b.id}: ${b.reason}${expected}, after ${result.entries} good entries`
}
