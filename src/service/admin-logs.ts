import {
  entriesOfCall,
  type LogVerification,
  type Removed,
  removeOldEntries,
  removeOldestEntries,
  verifyLogs,
} from '../audit/index.js'
import { invalid, isoAfter } from '../kernel/index.js'
import { adminContext } from './effects.js'
import type { Wiring } from './wiring.js'

/** The admin's audit log powers. */
export interface LogAdmin {
  /**
   * Verifies `tenantId`'s audit log: every entry's MAC under the tenant's audit key, each entry in
   * its place, and each chain (lane) without a gap from its start or where retention left it.
   * Answers the first broken link, if any. Reads the whole log of the tenant, page by page (1 000 entries a page).
   */
  verifyLogs(input: { tenantId: string }): Promise<LogVerification>
  /**
   * Removes the entries older than the retention (`logRetentionDays`) of every tenant, step by
   * step, leaving each writer's retention mark so verification still holds; logs what it removed.
   * Answers how many entries it removed. `admin.sweep` runs it too.
   */
  sweepLogs(): Promise<{ removed: number }>
}

/** Most retention steps one sweep takes per tenant (`RETENTION_STEP` entries each): the rest waits for the next sweep. */
export const MAX_RETENTION_STEPS = 64

/**
 * Logs the creation of tenant `tenantId` just after the write that made it (its audit key comes
 * from the key that write stored, so the entry cannot ride in it).
 */
export async function logTenantCreated(w: Wiring, tenantId: string, at: string): Promise<void> {
  if (!w.audit) return
  await w.audit.commit(
    tenantId,
    entriesOfCall(adminContext(tenantId, 'tenant.create', at), [tenantId], 'success'),
  )
}

/** The admin's audit log powers over the wired service (no-ops when the log is off). */
export function logAdmin(w: Wiring): LogAdmin {
  return {
    async verifyLogs(input) {
      const tenantId = input?.tenantId
      if (typeof tenantId !== 'string' || !tenantId) throw invalid('tenantId', 'is required')
      if (!w.audit) return { ok: true, entries: 0, lanes: 0 }
      return verifyLogs(w.store, w.audit.mac, tenantId)
    },
    async sweepLogs() {
      const audit = w.audit
      if (!audit) return { removed: 0 }
      const now = w.now()
      const before = isoAfter(now, -w.logRetentionMs)
      let removed = 0
      // A cut stops before the writes of this process still in flight (see `RemovalOptions`).
      for (const tenant of await w.store.listTenants()) {
        const landing = (writer: string) => audit.lanes.landingFrom(writer, tenant.id)
        const old = await removeSteps((left) =>
          removeOldEntries(w.store, audit.mac, tenant.id, before, now, { limit: left, landing }),
        )
        // Past the bound, the oldest entries go too, whatever their age.
        const excess = (await w.store.countRecords(tenant.id, 'log')) - w.maxLogEntries
        const over = await removeSteps(
          (left) => removeOldestEntries(w.store, audit.mac, tenant.id, left, now, landing),
          excess,
        )
        if (!old && !over) continue
        removed += old + over
        const context = adminContext(tenant.id, 'log.retention', now, 'system')
        const why = [
          ...(old ? [`removed ${old} entries created before ${before}`] : []),
          ...(over ? [`removed ${over} oldest entries past the bound of ${w.maxLogEntries}`] : []),
        ]
        await audit.commit(
          tenant.id,
          entriesOfCall(context, [], 'success').map((d) => ({
            ...d,
            entity_type: 'log',
            message: `log.retention: ${why.join('; ')}`,
          })),
        )
      }
      return { removed }
    },
  }
}

/**
 * Runs `step` (given by how many the count of entries is still to go down) up to
 * `MAX_RETENTION_STEPS` times, until it removes nothing or the count went down by `count`; answers
 * the entries removed.
 */
async function removeSteps(step: (left: number) => Promise<Removed>, count = Number.POSITIVE_INFINITY) {
  let removed = 0
  let fewer = 0
  for (let i = 0; i < MAX_RETENTION_STEPS && fewer < count; i++) {
    const r = await step(count - fewer)
    if (!r.removed) break
    removed += r.removed
    fewer += r.fewer
  }
  return removed
}
