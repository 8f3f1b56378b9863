import type { LogEntry } from '../kernel/index.js'
import type { Op, Store } from '../store/index.js'
import { type AuditMac, groupText, isWriterNumbered, macText, writerOf } from './chain.js'
import { isRetentionMark, markedLanes, markLane, markMessage } from './retention-mark.js'

/** How long entries are kept by default: 365 days, PCI DSS 10.5.1's twelve months. */
export const DEFAULT_LOG_RETENTION_DAYS = 365

/** Most entries a tenant keeps by default (`maxLogEntriesPerTenant`): the sweep removes the oldest beyond. */
export const DEFAULT_MAX_LOG_ENTRIES_PER_TENANT = 1_000_000

/** Old entries one retention step reads (then removes, lane by lane) at most. */
export const RETENTION_STEP = 256

/** Entries one retention step reads in one writer's ids at most: more than one group holds. */
export const WRITER_SCAN = 4096

/**
 * Removes `tenantId`'s entries older than `before` (ISO), one bounded step: reads the oldest
 * `RETENTION_STEP` entries, and for each writer they are of removes the writer's entries up to the
 * newest of them (its ids are numbered in order), and the rest of that entry's group, leaving the
 * writer's retention mark (written at `now`) in their place; an entry written later than a removed
 * one by a slower call goes with it (a call's duration early). Entries of the first format (ids
 * sorted by lane) go a lane at a time, marking the lane's first kept entry `floor`. Answers how many
 * entries it removed, marks not counted (0: nothing left to remove), and by how many the tenant's
 * count of entries went down (one less where a writer's first mark took a removed entry's place).
 */
export async function removeOldEntries(
  store: Pick<Store, 'listLogs' | 'write'>,
  mac: AuditMac,
  tenantId: string,
  before: string,
  now: string,
  { limit = RETENTION_STEP, ageless = false, landing }: RemovalOptions = {},
): Promise<Removed> {
  const step = Math.min(limit, RETENTION_STEP)
  const old = (await store.listLogs(tenantId, { order: 'oldest', to: before, limit: step })).filter(
    (e) => e.created_at < before,
  )
  const upTo = new Map<string, number>()
  const cuts = new Map<string, string>()
  for (const e of old) {
    if (!isWriterNumbered(e.id)) upTo.set(e.lane, Math.max(upTo.get(e.lane) ?? -1, e.seq))
    else if ((cuts.get(writerOf(e.id)) ?? '') < e.id) cuts.set(writerOf(e.id), e.id)
  }
  const ops: Op[] = []
  let removed = 0
  for (const [lane, last] of upTo) ops.push(...(await laneCut(store, mac, tenantId, lane, last)))
  removed += ops.filter((op) => op.op === 'log.delete').length
  let fewer = removed
  for (const [writer, cut] of cuts) {
    const c = await writerCut(store, mac, { tenantId, writer, cut, now, ageless, stop: landing?.(writer) })
    ops.push(...c.ops)
    removed += c.removed
    fewer += c.fewer
  }
  const none = { removed: 0, fewer: 0 }
  if (!ops.length) return none
  const result = await store.write({ ops })
  return result.ok ? { removed, fewer } : none
}

/**
 * How a retention step goes: at most `limit` old entries read (`RETENTION_STEP`); `ageless`, the
 * oldest whatever their age (`removeOldestEntries`); `landing`, for a writer of this process, the
 * first id of its writes still in flight (`Lanes.landingFrom`): a cut stops before it, so that no
 * entry lands before the writer's mark (a write numbered before the entries a cut removes, still
 * in flight when it runs; possible when the oldest entries go past the tenant's bound).
 */
export interface RemovalOptions {
  limit?: number
  ageless?: boolean
  landing?: (writer: string) => string | undefined
}

/** What a retention step did: entries removed (marks not counted), and how many fewer the tenant holds. */
export interface Removed {
  removed: number
  fewer: number
}

/**
 * The ops removing `writer`'s entries from its first up to id `cut` and the rest of its group (a
 * group's ids are consecutive), at most `WRITER_SCAN` (ending at a group's end), and putting the
 * writer's retention mark at the last one's id: each lane they were of, and each its mark named
 * before, with the seq it goes on at. `removed`: the entries gone, marks not counted; `fewer`: by
 * how many the count goes down (the mark takes the last one's place). None when a group among them
 * fails its MAC: a new mark would seal what was changed (a lane's seq edited to hide a gap after
 * it), so the writer's entries stay, for verification to report.
 */
async function writerCut(
  store: Pick<Store, 'listLogs'>,
  mac: AuditMac,
  at: {
    tenantId: string
    writer: string
    cut: string
    now: string
    ageless: boolean
    stop?: string | undefined
  },
): Promise<{ ops: Op[]; removed: number; fewer: number }> {
  const gone = await groupsThrough(store, at)
  if (!gone.length || !(await sealed(mac, at.tenantId, gone))) return { ops: [], removed: 0, fewer: 0 }
  const lanes = new Map<string, number>()
  const goOn = (lane: string, seq: number) => lanes.set(lane, Math.max(lanes.get(lane) ?? 0, seq))
  for (const e of gone) {
    if (isRetentionMark(e)) for (const [lane, seq] of markedLanes(e) ?? []) goOn(lane, seq)
    else goOn(e.lane, e.seq + 1)
  }
  const last = gone[gone.length - 1]!
  const mark: Omit<LogEntry, 'mac'> = {
    tenant_id: at.tenantId,
    id: last.id,
    actor_type: 'system',
    entity_type: 'log',
    operation: 'log.retention',
    message: markMessage(lanes),
    outcome: 'success',
    created_at: at.now,
    lane: markLane(at.writer),
    seq: 0,
  }
  const [m] = await mac(at.tenantId, [macText(mark)])
  const ops: Op[] = gone.slice(0, -1).map((e) => ({ op: 'log.delete', tenant_id: at.tenantId, id: e.id }))
  ops.push({ op: 'log.put', entry: { ...mark, mac: m! } })
  return { ops, removed: gone.filter((e) => !isRetentionMark(e)).length, fewer: gone.length - 1 }
}

/** Whether every group of `entries` (whole groups, in id order) carries the MAC of its entries. */
async function sealed(mac: AuditMac, tenantId: string, entries: readonly LogEntry[]): Promise<boolean> {
  const groups: { texts: string[]; given: string }[] = []
  let texts: string[] = []
  for (const { mac: given, ...fields } of entries) {
    texts.push(macText(fields))
    if (given === '') continue
    groups.push({ texts, given })
    texts = []
  }
  const due = await mac(
    tenantId,
    groups.map((g) => groupText(g.texts)),
  )
  return texts.length === 0 && groups.every((g, i) => due[i] === g.given)
}

/**
 * `writer`'s entries in id order from its first through `cut` and on to the end of the group `cut`
 * is in, at most `WRITER_SCAN` of them and ending at a group's end (an entry with a MAC). `ageless`
 * (removing the oldest whatever their age): on through one group of entries at least, as a cut
 * that reaches only the writer's mark (its first entry) would remove nothing.
 */
async function groupsThrough(
  store: Pick<Store, 'listLogs'>,
  at: { tenantId: string; writer: string; cut: string; ageless: boolean; stop?: string | undefined },
): Promise<LogEntry[]> {
  const out: LogEntry[] = []
  let ends = 0
  let entries = false
  let after = { created_at: '', id: `${at.writer}:` }
  for (;;) {
    const page = await store.listLogs(at.tenantId, { order: 'chain', after, limit: RETENTION_STEP })
    for (const e of page) {
      const done = e.id > at.cut && ends === out.length && (entries || !at.ageless)
      const landing = at.stop !== undefined && e.id >= at.stop
      if (!e.id.startsWith(`${at.writer}:`) || done || landing || out.length >= WRITER_SCAN) {
        return out.slice(0, ends)
      }
      out.push(e)
      if (e.mac !== '') ends = out.length
      if (!isRetentionMark(e)) entries = true
    }
    if (page.length < RETENTION_STEP) return out.slice(0, ends)
    after = { created_at: '', id: page[page.length - 1]!.id }
  }
}

/**
 * The ops removing `lane`'s entries up to seq `last` and marking the next one `floor`: sealed again
 * with what is left of its group (the entries up to the group's sealing entry, whose MAC is made
 * again over them; see `chained`). None when a group it read fails its MAC (see `writerCut`).
 */
async function laneCut(
  store: Pick<Store, 'listLogs'>,
  mac: AuditMac,
  tenantId: string,
  lane: string,
  last: number,
): Promise<Op[]> {
  const ops: Op[] = []
  /** Every entry of the lane read: whole groups, checked before any is sealed again. */
  const read: LogEntry[] = []
  /** The kept part of the group the cut goes through, from its new `floor` entry. */
  const rest: LogEntry[] = []
  const done = async () =>
    (await sealed(mac, tenantId, read)) ? [...ops, ...(await resealed(mac, rest))] : []
  let after = { created_at: '', id: `${lane}:` }
  for (;;) {
    const page = await store.listLogs(tenantId, { order: 'chain', after, limit: RETENTION_STEP })
    for (const e of page) {
      if (e.lane !== lane) return done()
      read.push(e)
      if (e.seq <= last) {
        ops.push({ op: 'log.delete', tenant_id: tenantId, id: e.id })
        continue
      }
      rest.push(rest.length ? e : { ...e, floor: true })
      if (e.mac !== '') return done()
    }
    if (page.length < RETENTION_STEP) return done()
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
  now: string,
  landing?: RemovalOptions['landing'],
): Promise<Removed> {
  const options: RemovalOptions = { limit: count, ageless: true }
  if (landing) options.landing = landing
  return count > 0
    ? removeOldEntries(store, mac, tenantId, '9999-12-31T23:59:59.999Z', now, options)
    : { removed: 0, fewer: 0 }
}
