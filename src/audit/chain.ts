import { randomBytes } from 'node:crypto'
import type { LogEntry } from '../kernel/index.js'
import type { EntryDraft } from './entries.js'

/** The HMAC purpose of the audit key: a subkey of the tenant's key, as search indexes have theirs. */
export const AUDIT_PURPOSE = 'audit-log'

/**
 * HMAC-SHA-256 (base64url) of each of `values` under the audit key of `tenantId`, in order: one
 * call per write (or verification page), so the key is looked up once for all its entries.
 */
export type AuditMac = (tenantId: string, values: readonly string[]) => string[] | Promise<string[]>

/**
 * An entry's id in the first format: its lane, then its seq as 12 digits, so ids sorted each lane in
 * sequence order, one lane after the other. Entries written so still verify (`verify.ts`).
 */
export const entryId = (lane: string, seq: number) => `${lane}:${String(seq).padStart(12, '0')}`

/**
 * An entry's id: its writer, `:`, then the writer's count of entries numbered as 12 digits. A writer
 * numbers entries in the order it seals them, on all its lanes at once, so a store's index of ids
 * grows at its end (ids keyed by lane took a page of the file store's B-tree per lane in flight in
 * each commit: docs/audit-log.md, "Measured"). Each lane's entries still sort in seq order (a
 * lane's seqs are given in the order they are numbered).
 */
export const writerEntryId = (writer: string, n: number) => `${writer}:${String(n).padStart(12, '0')}`

/** Whether `id` has the form of `writerEntryId` (its writer, `:`), not the first format's (a lane, `.`…). */
export const isWriterNumbered = (id: string) => id[writerOf(id).length] === ':'

/** The writer an id (of either format) or a lane names: what comes before its first `.` or `:`. */
export const writerOf = (idOrLane: string) => {
  const end = idOrLane.search(/[.:]/)
  return end < 0 ? idOrLane : idOrLane.slice(0, end)
}

/**
 * The text an entry's MAC covers: every field but `mac`, in a fixed order, each JSON-encoded (so no
 * field can spill into the next). The tenant id and the entry's place (lane, seq) are part of it:
 * an entry copied to another tenant or moved to another place fails.
 */
export function macText(e: Omit<LogEntry, 'mac'>): string {
  // Built by hand: the same text as `JSON.stringify` of the array of these values (which it was),
  // without the array and its generic walk (it runs for every entry); `test/audit/chain.test.ts`
  // holds the two equal, escapes and fields of the wrong type included.
  const seq = Number.isSafeInteger(e.seq) ? String(e.seq) : element(e.seq)
  return `["tokenvault-audit-v1",${q(e.tenant_id)},${q(e.id)},${q(e.lane)},${seq},${e.floor === true},${q(e.actor_id)},${q(e.actor_type)},${q(e.entity_type)},${q(e.entity_id)},${q(e.operation)},${q(e.message)},${q(e.outcome)},${q(e.request_id)},${q(e.created_at)}]`
}

/**
 * A string JSON writes as itself in quotes: code units from the space up, but for the quote, the
 * backslash and surrogates (JSON escapes a control character, a quote or a backslash, and a lone
 * surrogate; a string with any surrogate takes JSON's own path).
 */
const PLAIN = /^[\u0020\u0021\u0023-\u005b\u005d-\ud7ff\ue000-\uffff]*$/

/** How `JSON.stringify` writes `value` as an array's element (absent: `null`). */
const element = (value: unknown) => JSON.stringify([value]).slice(1, -1)

/** A field as `JSON.stringify` writes it in an array: absent `null`, a plain string in quotes, else JSON's own. */
const q = (value: unknown) =>
  value === undefined || value === null
    ? 'null'
    : typeof value === 'string' && PLAIN.test(value)
      ? `"${value}"`
      : element(value)

/** One lane of one tenant: the next seq it gives. At most one write holds it at a time. */
interface Lane {
  id: string
  next: number
}

/**
 * A lane held by one write: the seqs it gave that write (`from` … `from + count - 1`), and the
 * writer's numbers of its entries' ids (`idFrom` …).
 */
export interface HeldLane {
  tenantId: string
  lane: Lane
  from: number
  count: number
  writer: string
  idFrom: number
}

/**
 * This process's chains of one kind: per tenant, lanes that each give contiguous seqs. A write
 * takes a free lane (or opens a new one), numbers its entries from the lane's next seq, and gives
 * the lane back when the store answered: acknowledged, the seqs are used; refused, they are given
 * again to the next write (no gap: nothing landed); unknown (the store threw), the lane is retired
 * (what landed is its last entries). So a lane's entries in the store are contiguous from 0 (or from
 * a retention floor) to its end, whatever failed — a gap is a removal. Writes of one tenant run in
 * parallel on as many lanes as they need, up to `MAX_HELD_LANES`: no tenant-wide serialization.
 *
 * Bounded so that a retention mark (which names each lane of its writer whose entries it removed,
 * `retention-mark.ts`) stays small: a tenant's writes wait for a lane beyond `MAX_HELD_LANES` held
 * (`acquire`), so idle lanes never outnumber them and none retires but after an unknown outcome;
 * and once a tenant has opened `MAX_LANES_PER_WRITER` lanes under this writer (lanes retired by
 * store failures), the process starts a new writer, as a restart would: every idle lane ends there.
 */
export class Lanes {
  /** This process's writer id: random, so two processes (or two starts) never share a lane. */
  writer = newWriter()

  constructor(
    /** Lanes a tenant's writes hold at once, and open under one writer (smaller in tests). */
    private readonly bounds: LaneBounds = { held: MAX_HELD_LANES, perWriter: MAX_LANES_PER_WRITER },
  ) {}

  private readonly free = new Map<string, Lane[]>()
  /** Lanes of each tenant held by a write now, and the writes waiting for one (`acquire`). */
  private readonly held = new Map<string, number>()
  private readonly waiting = new Map<string, (() => void)[]>()
  /** Every lane held now, whatever its tenant (`landingFrom`). */
  private readonly inFlight = new Set<HeldLane>()
  /** Lanes opened under this writer: in all (their names), and per tenant (its bound). */
  private opened = 0
  private readonly openedBy = new Map<string, number>()
  /**
   * Entries numbered so far under this writer, per tenant (each id's number: see `writerEntryId`).
   * Per tenant, as token ids are: one count for every tenant let a tenant read from its own
   * entries' ids how many calls the others made between two of its own.
   */
  private readonly numbered = new Map<string, number>()

  /**
   * `take`, once the tenant holds fewer lanes than its bound (`MAX_HELD_LANES` by default): at
   * once when it does (no promise), else when a lane is given back (writes that wait are served in
   * their order).
   */
  acquire(tenantId: string, count: number): HeldLane | Promise<HeldLane> {
    if ((this.held.get(tenantId) ?? 0) < this.bounds.held && !this.waiting.has(tenantId)) {
      return this.take(tenantId, count)
    }
    return new Promise((resolve) => {
      const queue = this.waiting.get(tenantId) ?? []
      queue.push(() => resolve(this.take(tenantId, count)))
      this.waiting.set(tenantId, queue)
    })
  }

  /** Takes a lane of `tenantId` for a write of `count` entries, and numbers their ids. */
  take(tenantId: string, count: number): HeldLane {
    const lane = this.free.get(tenantId)?.pop() ?? this.open(tenantId)
    this.held.set(tenantId, (this.held.get(tenantId) ?? 0) + 1)
    const idFrom = this.numbered.get(tenantId) ?? 0
    this.numbered.set(tenantId, idFrom + count)
    const held = { tenantId, lane, from: lane.next, count, writer: this.writer, idFrom }
    this.inFlight.add(held)
    return held
  }

  /** The first id of `tenantId` that `writer`'s writes still in flight may land at, if any: retention cuts before it. */
  landingFrom(writer: string, tenantId: string): string | undefined {
    let first: number | undefined
    for (const h of this.inFlight)
      if (h.writer === writer && h.tenantId === tenantId && (first === undefined || h.idFrom < first))
        first = h.idFrom
    return first === undefined ? undefined : writerEntryId(writer, first)
  }

  /** Gives a held lane back after its write: see the class. */
  settle(held: HeldLane, outcome: 'ok' | 'refused' | 'unknown'): void {
    this.inFlight.delete(held)
    const n = (this.held.get(held.tenantId) ?? 1) - 1
    if (n > 0) this.held.set(held.tenantId, n)
    else this.held.delete(held.tenantId)
    // A lane of a writer before this one ends with it; an unknown outcome retires it.
    if (outcome !== 'unknown' && held.writer === this.writer) {
      if (outcome === 'ok') held.lane.next = held.from + held.count
      const list = this.free.get(held.tenantId)
      if (list) list.push(held.lane)
      else this.free.set(held.tenantId, [held.lane])
    }
    const queue = this.waiting.get(held.tenantId)
    if (!queue || n >= this.bounds.held) return
    const next = queue.shift()!
    if (!queue.length) this.waiting.delete(held.tenantId)
    next()
  }

  /** Forgets the idle lanes of `tenantId` (a deleted tenant). */
  forget(tenantId: string): void {
    this.free.delete(tenantId)
    this.openedBy.delete(tenantId)
  }

  /** A new lane of `tenantId`, under a new writer when the tenant opened its share under this one. */
  private open(tenantId: string): Lane {
    if ((this.openedBy.get(tenantId) ?? 0) >= this.bounds.perWriter) {
      this.writer = newWriter()
      this.free.clear()
      this.openedBy.clear()
      this.opened = 0
      this.numbered.clear()
    }
    this.openedBy.set(tenantId, (this.openedBy.get(tenantId) ?? 0) + 1)
    return { id: `${this.writer}.${String(this.opened++).padStart(6, '0')}`, next: 0 }
  }
}

const newWriter = () => randomBytes(9).toString('base64url')

/** See `Lanes`: lanes a tenant's writes hold at once, and lanes it opens under one writer. */
export interface LaneBounds {
  held: number
  perWriter: number
}

/** Lanes a tenant's writes hold at once in a process; one more write waits for one to be given back. */
export const MAX_HELD_LANES = 256

/** Lanes a tenant opens under one writer; opening one more starts a new writer (`Lanes`). */
export const MAX_LANES_PER_WRITER = 1024

/**
 * The texts of a group's entries joined as its MAC covers them: one line each (an entry's text is
 * JSON, which holds no raw newline, so the lines cannot be read another way).
 */
export const groupText = (texts: readonly string[]) => texts.join('\n')

/** No field's value (`groupMacText`'s memo before a field is seen). */
const NONE = Symbol('none')

/**
 * `groupText` of the entries' `macText`s, written in one pass: a group's entries mostly repeat
 * their fields (tenant, lane, actor, operation, message, outcome, time), so each field's text is
 * kept from the entry before and made again only when its value differs (no texts array, no join,
 * and a repeated string is not tested for escapes again). `test/audit/chain.test.ts` holds it
 * equal to `groupText` of the `macText`s.
 */
export function groupMacText(entries: readonly Omit<LogEntry, 'mac'>[]): string {
  const seen = new Array<unknown>(11).fill(NONE)
  const texts = new Array<string>(11).fill('')
  const f = (slot: number, value: unknown): string => {
    if (seen[slot] === value) return texts[slot]!
    seen[slot] = value
    texts[slot] = q(value)
    return texts[slot]!
  }
  let out = ''
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!
    const seq = Number.isSafeInteger(e.seq) ? String(e.seq) : element(e.seq)
    out += `${i === 0 ? '' : '\n'}["tokenvault-audit-v1",${f(0, e.tenant_id)},${q(e.id)},${f(1, e.lane)},${seq},${e.floor === true},${f(2, e.actor_id)},${f(3, e.actor_type)},${f(4, e.entity_type)},${f(5, e.entity_id)},${f(6, e.operation)},${f(7, e.message)},${f(8, e.outcome)},${f(9, e.request_id)},${f(10, e.created_at)}]`
  }
  return out
}

/**
 * The drafts of one write numbered on a held lane and sealed as one group: the entries are built
 * once, and one MAC covers all of them (`groupText` of their texts, in seq order), carried by the
 * group's last entry; the others carry `mac: ''`. One HMAC a write, not one an entry. A group of
 * one entry carries the MAC of its own text, as every entry did before groups.
 */
export function chained(
  mac: AuditMac,
  held: HeldLane,
  drafts: readonly EntryDraft[],
): LogEntry[] | Promise<LogEntry[]> {
  if (!drafts.length) return []
  const lane = held.lane.id
  const entries = new Array<LogEntry>(drafts.length)
  for (let i = 0; i < drafts.length; i++) {
    const id = writerEntryId(held.writer, held.idFrom + i)
    entries[i] = entryOf(drafts[i]!, held.tenantId, id, lane, held.from + i)
  }
  // Sealed at once when the audit key is at hand (no promise, no turn); else once it is.
  const seal = (macs: string[]) => {
    entries[entries.length - 1]!.mac = macs[0]!
    return entries
  }
  const macs = mac(held.tenantId, [groupMacText(entries)])
  return Array.isArray(macs) ? seal(macs) : macs.then(seal)
}

/**
 * An entry of `d` at `seq` of `lane`, its MAC to come: built field by field in one shape (a spread
 * of the draft cost more than the MAC), optional fields set only when present.
 */
function entryOf(d: EntryDraft, tenantId: string, id: string, lane: string, seq: number): LogEntry {
  const e: LogEntry = {
    tenant_id: tenantId,
    id,
    actor_type: d.actor_type,
    entity_type: d.entity_type,
    operation: d.operation,
    message: d.message,
    outcome: d.outcome,
    created_at: d.created_at,
    lane,
    seq,
    mac: '',
  }
  if (d.actor_id !== undefined) e.actor_id = d.actor_id
  if (d.entity_id !== undefined) e.entity_id = d.entity_id
  if (d.request_id !== undefined) e.request_id = d.request_id
  return e
}
