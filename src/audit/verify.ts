import { type LogEntry, nextTurn } from '../kernel/index.js'
import type { Store } from '../store/index.js'
import {
  type AuditMac,
  entryId,
  groupText,
  isWriterNumbered,
  macText,
  writerEntryId,
  writerOf,
} from './chain.js'
import { isRetentionMark, markedLanes } from './retention-mark.js'

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
  /**
   * The store's indexes miss the entry or file it under another time, type or entity: a filtered
   * `GET /logs` page would not show it where it belongs (`Store.unindexedLog`).
   */
  | 'index'

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

/**
 * Entries verification reads at once; a turn of the event loop comes between two pages
 * (`nextTurn`), so a long log's verification holds other calls back by a page at most (on the file
 * store a read of 78 000 entries held the process 0.8 s at once).
 */
const PAGE = 250

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
 * Walks `tenantId`'s log in chain order (id order, page by page) and checks each entry's place, that
 * each lane runs without a gap from 0 (or from where retention removed its entries before), and each
 * group's MAC under the tenant's audit key: a group is the entries of one write on one lane, sealed
 * by its last entry's MAC over all of them (`chained`); a lane that ends before its group's sealing
 * entry is broken too. A writer's lanes run side by side in its ids (each lane's in seq order), and
 * its lanes end where its ids do. Stops at the first broken link: a group whose MAC fails is
 * reported at its first entry.
 */
export async function verifyLogs(
  store: Pick<Store, 'listLogs' | 'unindexedLog'>,
  mac: AuditMac,
  tenantId: string,
): Promise<LogVerification> {
  const state: WalkState = {
    entries: 0,
    lanes: 0,
    writer: undefined,
    next: new Map(),
    marked: null,
    lastId: '',
    open: null,
  }
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
    const hidden = await store.unindexedLog(tenantId, page)
    if (hidden !== null) return indexBreak(state, page, hidden)
    if (end) return { ok: true, entries: state.entries, lanes: state.lanes }
    const last = page[page.length - 1]!
    after = { created_at: last.created_at, id: last.id }
    await nextTurn()
  }
}

/** The break at `id`, an entry of `page` (the last page walked) the store's indexes do not file as it is. */
function indexBreak(s: WalkState, page: readonly LogEntry[], id: string): LogVerification {
  const at = Math.max(
    0,
    page.findIndex((e) => e.id === id),
  )
  const e = page[at]!
  const broken: BrokenLink = { id, lane: e.lane, seq: e.seq, reason: 'index' }
  return { ok: false, entries: s.entries - page.length + at, lanes: s.lanes, broken }
}

/**
 * Where the walk is: entries and lanes seen, the writer whose ids it is in, the next seq of each of
 * that writer's lanes seen, where its retention mark says its lanes go on (`null`: no mark), the last
 * id seen, and the group under way (a group's ids are consecutive: one at a time).
 */
interface WalkState {
  entries: number
  lanes: number
  writer: string | undefined
  next: Map<string, number>
  marked: ReadonlyMap<string, number> | null
  lastId: string
  open: Group | null
}

/** The lanes of two retention marks, each where the further of them says it goes on. */
function furthest(
  a: ReadonlyMap<string, number> | null,
  b: ReadonlyMap<string, number>,
): ReadonlyMap<string, number> {
  if (a === null) return b
  const out = new Map(a)
  for (const [lane, seq] of b) out.set(lane, Math.max(out.get(lane) ?? 0, seq))
  return out
}

/** Ends the group under way: one that ended before its sealing entry closes with no MAC, and fails. */
function endGroup(s: WalkState, closed: Group[]): void {
  if (s.open) closed.push(s.open)
  s.open = null
}

/** Ends the lanes of the writer under way (and its group). */
function endWriter(s: WalkState, closed: Group[]): void {
  endGroup(s, closed)
  s.next.clear()
  s.marked = null
}

/**
 * One page of the walk: checks places and gaps entry by entry, and gathers the groups the page
 * closes (in order) for their MACs. Stops at the first broken place or gap.
 */
function walkPage(s: WalkState, tenantId: string, page: readonly LogEntry[], end: boolean): Walk {
  const closed: Group[] = []
  for (const e of page) {
    const writer = typeof e.lane === 'string' ? writerOf(e.lane) : undefined
    if (writer !== s.writer) endWriter(s, closed)
    s.writer = writer
    // An entry of another lane ends the group under way: its ids were consecutive.
    if (s.open && s.open.first.lane !== e.lane) endGroup(s, closed)
    const link = check(s, tenantId, e)
    if (link) return { closed, broken: { link, entries: s.entries } }
    s.lastId = e.id
    const { mac: given, ...fields } = e
    const group: Group = s.open ?? { first: e, before: s.entries, texts: [], given: '' }
    group.texts.push(macText(fields))
    s.entries++
    s.open = given === '' ? group : null
    if (given !== '') closed.push({ ...group, given })
    if (isRetentionMark(e)) {
      // The writer's first entries: where retention removed its lanes' entries before. Two sweeps
      // that ran at once (two processes) each leave one; each lane goes on where the furthest says.
      s.marked = furthest(s.marked, markedLanes(e) ?? new Map())
      continue
    }
    if (!s.next.has(e.lane)) s.lanes++
    s.next.set(e.lane, e.seq + 1)
  }
  if (end) endWriter(s, closed)
  return { closed }
}

/**
 * The broken place or gap at `e`, if any, given its lane's walk so far (`undefined`: the lane starts
 * here). Ids rise entry after entry (a value moved to another key, or copied, breaks that), each
 * names its writer (or is its lane and seq, in the first format); a retention mark comes first in
 * its writer's ids, and names how far each lane it removed went; a lane starts at 0, where its
 * writer's mark says, or (first format) at an entry retention marked `floor`.
 */
function check(s: WalkState, tenantId: string, e: LogEntry): BrokenLink | null {
  const at = { id: e.id, lane: e.lane, seq: e.seq }
  if (e.tenant_id !== tenantId || typeof e.id !== 'string' || typeof e.lane !== 'string' || e.id <= s.lastId)
    return { ...at, reason: 'place' }
  const writer = writerOf(e.lane)
  // Its writer's number, written as `writerEntryId` writes it (no other digits, no other writer).
  const numbered =
    isWriterNumbered(e.id) && e.id === writerEntryId(writer, Number(e.id.slice(writer.length + 1)))
  if (isRetentionMark(e)) {
    // Before any entry of its writer (after another mark, when two sweeps ran at once).
    const first = s.next.size === 0 && s.open === null
    return numbered && first && markedLanes(e) ? null : { ...at, reason: 'place' }
  }
  if (!numbered && e.id !== entryId(e.lane, e.seq)) return { ...at, reason: 'place' }
  const expected = s.next.get(e.lane)
  const seq = expected ?? s.marked?.get(e.lane) ?? 0
  if (e.seq !== seq && !(expected === undefined && e.floor === true))
    return { ...at, reason: 'gap', expected: seq }
  return null
}
