import type { LogEntry } from '../kernel/index.js'
import type { Store } from '../store/index.js'
import { type AuditMac, entryId, macText } from './chain.js'

/** Why a link of a tenant's log is broken. */
export type BrokenReason =
  /** The entry's MAC does not match its fields: changed, swapped, or copied from another tenant. */
  | 'mac'
  /** The entry's id is not its lane and seq, or it names another tenant: moved. */
  | 'place'
  /** Entries of the lane before this one are missing (removed, not by retention). */
  | 'gap'

/** The first broken link found, in chain order. */
export interface BrokenLink {
  id: string
  lane: string
  seq: number
  reason: BrokenReason
  /** For `gap`: the seq the lane expected here. */
  expected?: number
}

/** What `verifyLogs` found. */
export interface LogVerification {
  ok: boolean
  /** Entries checked (up to the first broken link). */
  entries: number
  /** Lanes (chains) seen. */
  lanes: number
  broken?: BrokenLink
}

/** Entries verification reads at once. */
const PAGE = 1000

/**
 * Walks `tenantId`'s log in chain order (each lane's entries in seq order, page by page) and checks
 * every entry's MAC under the tenant's audit key, its place, and that each lane runs without a gap
 * from 0 (or from the entry retention marked `floor`). Stops at the first broken link.
 */
export async function verifyLogs(
  store: Pick<Store, 'listLogs'>,
  mac: AuditMac,
  tenantId: string,
): Promise<LogVerification> {
  let entries = 0
  let lanes = 0
  let lane: string | undefined
  let expected = 0
  let after: { created_at: string; id: string } | undefined
  for (;;) {
    const page = await store.listLogs(tenantId, { order: 'chain', limit: PAGE, ...(after ? { after } : {}) })
    // One MAC call per page: the key is looked up once for its entries.
    const macs = await mac(
      tenantId,
      page.map(({ mac: _given, ...fields }) => macText(fields)),
    )
    for (const [i, e] of page.entries()) {
      const broken = check(macs[i]!, tenantId, e, e.lane === lane ? expected : undefined)
      if (broken) return { ok: false, entries, lanes, broken }
      if (e.lane !== lane) lanes++
      lane = e.lane
      expected = e.seq + 1
      entries++
    }
    if (page.length < PAGE) return { ok: true, entries, lanes }
    const last = page[page.length - 1]!
    after = { created_at: last.created_at, id: last.id }
  }
}

/**
 * The broken link at `e`, if any: `due` is the MAC its fields should carry, `expected` the seq due
 * in a lane already under way.
 */
function check(due: string, tenantId: string, e: LogEntry, expected: number | undefined): BrokenLink | null {
  const at = { id: e.id, lane: e.lane, seq: e.seq }
  if (e.tenant_id !== tenantId || e.id !== entryId(e.lane, e.seq)) return { ...at, reason: 'place' }
  if (due !== e.mac) return { ...at, reason: 'mac' }
  const seq = expected ?? 0
  // A lane starts at 0, or where retention removed what came before (`floor`, under the MAC).
  if (e.seq !== seq && !(expected === undefined && e.floor === true))
    return { ...at, reason: 'gap', expected: seq }
  return null
}
