import type { LogEntry } from '../kernel/index.js'
import type { Op, Store } from '../store/index.js'
import { type AuditMac, groupText, macText } from './chain.js'

/** How long entries are kept by default: 365 days, PCI DSS 10.5.1's twelve months. */
export const DEFAULT_LOG_RETENTION_DAYS = 365

/** Most entries a tenant keeps by default (`maxLogEntriesPerTenant`): the sweep removes the oldest beyond. */
export const DEFAULT_MAX_LOG_ENTRIES_PER_TENANT = 1_000_000

/** Old entries one retention step reads (then removes, lane by lane) at most. */
export const RETENTION_STEP = 256

/**
 * Removes `tenantId`'s entries older than `before` (ISO), one bounded step: reads the oldest
 * `RETENTION_STEP` entries, and for each lane they are in removes the lane's entries up to the
 * newest of them, marking the lane's first kept entry `floor` (its MAC made again), so that
 * verification knows the lane starts there. A lane's entries are removed as a prefix, never from the
 * middle: one written later than a removed one by a slower call of the same lane goes with it (a
 * call's duration early). Answers how many entries it removed (0: nothing left to remove).
 */
export async function removeOldEntries(
  store: Pick<Store, 'listLogs' | 'write'>,
  mac: AuditMac,
  tenantId: string,
  before: string,
  limit = RETENTION_STEP,
): Promise<number> {
  const step = Math.min(limit, RETENTION_STEP)
  const old = (await store.listLogs(tenantId, { order: 'oldest', to: before, limit: step })).filter(
    (e) => e.created_at < before,
  )
  const upTo = new Map<string, number>()
  for (const e of old) upTo.set(e.lane, Math.max(upTo.get(e.lane) ?? -1, e.seq))
  const ops: Op[] = []
  for (const [lane, last] of upTo) ops.push(...(await laneCut(store, mac, tenantId, lane, last)))
  if (!ops.length) return 0
  const result = await store.write({ ops })
  return result.ok ? ops.filter((op) => op.op === 'log.delete').length : 0
}

/**
 * The ops removing `lane`'s entries up to seq `last` and marking the next one `floor`: sealed again
 * with what is left of its group (the entries up to the group's sealing entry, whose MAC is made
 * again over them; see `chained`).
 */
async function laneCut(
  store: Pick<Store, 'listLogs'>,
  mac: AuditMac,
  tenantId: string,
  lane: string,
  last: number,
): Promise<Op[]> {
  const ops: Op[] = []
  /** The kept part of the group the cut goes through, from its new `floor` entry. */
  const rest: LogEntry[] = []
  let after = { created_at: '', id: `${lane}:` }
  for (;;) {
    const page = await store.listLogs(tenantId, { order: 'chain', after, limit: RETENTION_STEP })
    for (const e of page) {
      if (e.lane !== lane) return [...ops, ...(await resealed(mac, rest))]
      if (e.seq <= last) {
        ops.push({ op: 'log.delete', tenant_id: tenantId, id: e.id })
        continue
      }
      rest.push(rest.length ? e : { ...e, floor: true })
      if (e.mac !== '') return [...ops, ...(await resealed(mac, rest))]
    }
    if (page.length < RETENTION_STEP) return [...ops, ...(await resealed(mac, rest))]
    after = { created_at: '', id: page[page.length - 1]!.id }
  }
}

/**
 * The puts of the kept part of a group cut by retention: its first entry marked `floor`, and its
 * last carrying the MAC made again over all of them (the others carry none, as before).
 */
async function resealed(mac: AuditMac, rest: LogEntry[]): Promise<Op[]> {
  if (!rest.length) return []
  const texts = rest.map(({ mac: _old, ...fields }) => macText(fields))
  const [m] = await mac(rest[0]!.tenant_id, [groupText(texts)])
  const first = { ...rest[0]!, mac: rest.length === 1 ? m! : '' }
  const ops: Op[] = [{ op: 'log.put', entry: first }]
  if (rest.length > 1) ops.push({ op: 'log.put', entry: { ...rest[rest.length - 1]!, mac: m! } })
  return ops
}

/**
 * Removes `tenantId`'s oldest `count` entries (at least; at most `RETENTION_STEP` read per step,
 * so it may take several steps), as retention does: lane prefixes, the next entry marked `floor`.
 * Answers how many it removed.
 */
export async function removeOldestEntries(
  store: Pick<Store, 'listLogs' | 'write'>,
  mac: AuditMac,
  tenantId: string,
  count: number,
): Promise<number> {
  return count > 0 ? removeOldEntries(store, mac, tenantId, '9999-12-31T23:59:59.999Z', count) : 0
}
