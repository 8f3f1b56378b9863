import type { LogEntry } from '../kernel/index.js'
import type { Store } from '../store/index.js'
import { type AuditMac, entryId, groupText, macText } from './chain.js'

/** Why a link of a tenant's log is broken. */
export type BrokenReason =
  /**
   * The MAC of the entry's group does not match its entries' fields: one changed, swapped, copied
   * from another tenant, or the group's sealing entry removed.
   */
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

/** A group whose entries were read, its MAC to check: its first entry (where a break is reported) and what it carries. */
interface Group {
  first: LogEntry
  /** Entries checked before the group's first. */
  before: number
  texts: string[]
  /** The MAC its last entry carries (`''`: the lane ended before a sealing entry). */
  given: string
}

/** Where a page's walk stopped: at a broken place or gap (`broken`), or not. */
interface Walk {
  closed: Group[]
  broken?: { link: BrokenLink; entries: number }
}

/**
 * Walks `tenantId`'s log in chain order (each lane's entries in seq order, page by page) and checks
 * each entry's place, that each lane runs without a gap from 0 (or from the entry retention marked
 * `floor`), and each group's MAC under the tenant's audit key: a group is the entries of one write
 * on one lane, sealed by its last entry's MAC over all of them (`chained`); a lane that ends before
 * its group's sealing entry is broken too. Stops at the first broken link: a group whose MAC fails
 * is reported at its first entry.
 */
export async function verifyLogs(
  store: Pick<Store, 'listLogs'>,
  mac: AuditMac,
  tenantId: string,
): Promise<LogVerification> {
  const state: WalkState = { entries: 0, lanes: 0, lane: undefined, expected: 0, open: null }
  let after: { created_at: string; id: string } | undefined
  for (;;) {
    const page = await store.listLogs(tenantId, { order: 'chain', limit: PAGE, ...(after ? { after } : {}) })
    const end = page.length < PAGE
    const walk = walkPage(state, tenantId, page, end)
    // One MAC call per page for the groups it closed: the key is looked up once for all of them.
    const due = await mac(
      tenantId,
      walk.closed.map((g) => groupText(g.texts)),
    )
    for (const [i, g] of walk.closed.entries()) {
      if (due[i] !== g.given) {
        const at = { id: g.first.id, lane: g.first.lane, seq: g.first.seq }
        return { ok: false, entries: g.before, lanes: state.lanes, broken: { ...at, reason: 'mac' } }
      }
    }
    if (walk.broken)
      return { ok: false, entries: walk.broken.entries, lanes: state.lanes, broken: walk.broken.link }
    if (end) return { ok: true, entries: state.entries, lanes: state.lanes }
    const last = page[page.length - 1]!
    after = { created_at: last.created_at, id: last.id }
  }
}

/** Where the walk is: entries and lanes seen, the lane under way, its next seq, and its group still open. */
interface WalkState {
  entries: number
  lanes: number
  lane: string | undefined
  expected: number
  open: Group | null
}

/**
 * One page of the walk: checks places and gaps entry by entry, and gathers the groups the page
 * closes (in order) for their MACs. A lane that ends with its group open (`''` MACs to its last
 * entry) closes that group with no MAC: it fails. Stops at the first broken place or gap.
 */
function walkPage(s: WalkState, tenantId: string, page: readonly LogEntry[], end: boolean): Walk {
  const closed: Group[] = []
  for (const e of page) {
    if (e.lane !== s.lane && s.open) {
      closed.push(s.open)
      s.open = null
    }
    const link = check(tenantId, e, e.lane === s.lane ? s.expected : undefined)
    if (link) return { closed, broken: { link, entries: s.entries } }
    if (e.lane !== s.lane) s.lanes++
    s.lane = e.lane
    s.expected = e.seq + 1
    const { mac: given, ...fields } = e
    s.open ??= { first: e, before: s.entries, texts: [], given: '' }
    s.open.texts.push(macText(fields))
    s.entries++
    if (given !== '') {
      s.open.given = given
      closed.push(s.open)
      s.open = null
    }
  }
  if (end && s.open) {
    closed.push(s.open)
    s.open = null
  }
  return { closed }
}

/** The broken place or gap at `e`, if any: `expected` is the seq due in a lane already under way. */
function check(tenantId: string, e: LogEntry, expected: number | undefined): BrokenLink | null {
  const at = { id: e.id, lane: e.lane, seq: e.seq }
  if (e.tenant_id !== tenantId || e.id !== entryId(e.lane, e.seq)) return { ...at, reason: 'place' }
  const seq = expected ?? 0
  // A lane starts at 0, or where retention removed what came before (`floor`, under the MAC).
  if (e.seq !== seq && !(expected === undefined && e.floor === true))
    return { ...at, reason: 'gap', expected: seq }
  return null
}
