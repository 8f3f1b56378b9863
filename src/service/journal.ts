import { BySize, parseDateTime, ServiceError } from '../kernel/index.js'
import { StoreError } from '../store/index.js'

/** Who made a call: an application's key, a session's key, or the host's operator API. */
export type Actor =
  | { kind: 'application'; id: string }
  | { kind: 'session'; id: string }
  | { kind: 'admin' }
  | { kind: 'unknown' }

/**
 * One recorded operation. It holds ids and outcomes only — never token data, masks, keys, nonces,
 * configuration or arguments.
 */
export interface JournalEntry {
  /** Position in the journal (increasing from 1). */
  seq: number
  /** The service clock's time of the call. */
  at: string
  /** The tenant the call acted in, when known (null for a key that did not authenticate). */
  tenant_id: string | null
  actor: Actor
  /** `token.create`, `token.child.list`, `session.authorize`, `reactor.react`, `admin.create_tenant`, … */
  operation: string
  /** `ok`, or the error's code (a `ServiceError` code, or `store_<code>` for a `StoreError`). */
  outcome: { ok: true } | { ok: false; code: string }
  /** Ids of the records the call named or made (the id argument, the answer's id). */
  ids: string[]
}

/** What `service.on('event', fn)` hands `fn`: a successful change, under Basis Theory's event name. */
export interface VaultEvent {
  /** `token.created`, `token.updated`, `token.deleted`, `reactor.created`, `session.authorized`, … */
  type: string
  at: string
  tenant_id: string | null
  actor: Actor
  ids: string[]
}

/** Filters of `journal.query`: all optional; `since` is an ISO time in any offset (inclusive; anything else is a `validation_failed` error). */
export interface JournalQuery {
  tenant?: string
  operation?: string
  since?: string
  limit?: number
}

/**
 * The journal of operations, queryable, with change events: the newest `capacity` entries in all
 * and `perTenant` of one tenant (a tenant's flood evicts only its own oldest entries).
 */
export interface OperationJournal {
  /** The kept entries that pass `filter`, oldest first, each a new object (changing one changes nothing kept). */
  query(filter?: JournalQuery): JournalEntry[]
  /** Forgets every entry (the sequence goes on). */
  clear(): void
  readonly capacity: number
  readonly perTenant: number
}

/** Past tenses of the verbs whose success is an event; other operations make none. */
const EVENT_VERBS: Record<string, string> = {
  create: 'created',
  update: 'updated',
  delete: 'deleted',
  authorize: 'authorized',
  commit: 'committed',
  rollback: 'rolled_back',
  react: 'reacted',
}

/** The event a successful `operation` makes, if any: `token.create` → `token.created`. */
export function eventType(operation: string): string | null {
  const dot = operation.lastIndexOf('.')
  const verb = EVENT_VERBS[operation.slice(dot + 1)]
  return verb === undefined ? null : `${operation.slice(0, dot)}.${verb}`
}

/** Ids a call names or makes: a string first argument and the answer's `id` (or `application.id`). */
export function touchedIds(args: readonly unknown[], result: unknown): string[] {
  const ids: string[] = []
  if (typeof args[0] === 'string') ids.push(args[0])
  const r = result as { id?: unknown; application?: { id?: unknown } } | null | undefined
  if (r && typeof r === 'object') {
    if (typeof r.id === 'string' && !ids.includes(r.id)) ids.push(r.id)
    if (typeof r.application?.id === 'string') ids.push(r.application.id)
  }
  return ids
}

/** The outcome of a call that threw: its `ServiceError` code, `store_<code>`, or `internal`. */
export function failureOutcome(error: unknown): JournalEntry['outcome'] {
  return { ok: false, code: failureCode(error) }
}

/** The code of a call that threw, as its outcome names it (`failureOutcome`). */
export function failureCode(error: unknown): string {
  if (error instanceof ServiceError) return error.code
  if (error instanceof StoreError) return `store_${error.code}`
  return 'internal'
}

/** The journal's default bounds: entries kept in all, and of one tenant. */
export const DEFAULT_JOURNAL_SIZE = 1000
export const DEFAULT_JOURNAL_SIZE_PER_TENANT = 500

/** Ids an entry touched as kept: none, one (the usual call), or several. */
type KeptIds = string | readonly string[] | undefined

/** `ids` as kept: no array for none or one (a copy for several: the caller's may change). */
const kept = (ids: readonly string[]): KeptIds =>
  ids.length === 0 ? undefined : ids.length === 1 ? ids[0] : [...ids]

/** Kept ids as a new array. */
const idsOf = (ids: KeptIds): string[] =>
  ids === undefined ? [] : typeof ids === 'string' ? [ids] : [...ids]

/** How many slots of `Entries` one entry takes. */
const STRIDE = 7
/** Slots an `Entries` keeps for reuse once emptied, and drops at its front before copying down. */
const ROOMY = 8 * STRIDE

/**
 * One tenant's entries, oldest first, as a queue whose front is dropped in O(1) (amortized): one
 * array, each entry in seven slots in a row (seq, at, actor kind, actor id, operation, failure
 * code or null, ids). No object is kept per entry, only slots of an array made once, holding
 * strings the call already had (the instant's ISO string, the principal's ids, the operation's
 * name): a journal of entry objects promoted a few hundred bytes per call into the old generation,
 * and its collections, which mark the whole heap, cost a get about 2-3 µs at a 200 MiB heap. One
 * array, not seven side by side: with many tenants calling in turn, each call writes where one
 * array ends (a cache line or two) instead of where seven do, and a queue emptied or compacted
 * makes one array, not seven.
 */
class Entries {
  /** Slots from `head` to `end` hold the entries; the rest are cleared, kept for the next pushes. */
  private slots: unknown[] = []
  private head = 0
  private end = 0

  constructor(readonly tenantId: string | null) {}

  get size(): number {
    return (this.end - this.head) / STRIDE
  }
  push(seq: number, at: string, actor: Actor, operation: string, code: string | null, ids: KeptIds): void {
    const slots = this.slots
    const id = 'id' in actor ? actor.id : undefined
    const i = this.end
    if (i + STRIDE <= slots.length) {
      slots[i] = seq
      slots[i + 1] = at
      slots[i + 2] = actor.kind
      slots[i + 3] = id
      slots[i + 4] = operation
      slots[i + 5] = code
      slots[i + 6] = ids
    } else slots.push(seq, at, actor.kind, id, operation, code, ids)
    this.end = i + STRIDE
  }
  /**
   * Drops the oldest entry. Its slots are cleared (nothing kept alive through them); an emptied
   * queue starts again at the front of the same array, so a tenant with an entry or two (many
   * tenants calling in turn, each evicting its own oldest) allocates nothing; a long one is copied
   * down once half of it is dropped, or let go when emptied.
   */
  shift(): void {
    const slots = this.slots
    for (let k = this.head; k < this.head + STRIDE; k++) slots[k] = undefined
    this.head += STRIDE
    if (this.head === this.end) {
      this.head = 0
      this.end = 0
      if (slots.length > ROOMY) this.slots = []
    } else if (this.head > ROOMY && this.head * 2 >= this.end) {
      this.slots = slots.slice(this.head, this.end)
      this.end -= this.head
      this.head = 0
    }
  }
  /** The entries that pass `keep`, oldest first, each a new object. */
  select(keep: (operation: string, at: string) => boolean, out: JournalEntry[]): void {
    const slots = this.slots
    for (let i = this.head; i < this.end; i += STRIDE) {
      const at = slots[i + 1] as string
      const operation = slots[i + 4] as string
      if (!keep(operation, at)) continue
      const kind = slots[i + 2] as Actor['kind']
      const id = slots[i + 3] as string | undefined
      const code = slots[i + 5] as string | null
      out.push({
        seq: slots[i] as number,
        at,
        tenant_id: this.tenantId,
        actor: (id === undefined ? { kind } : { kind, id }) as Actor,
        operation,
        outcome: code === null ? { ok: true } : { ok: false, code },
        ids: idsOf(slots[i + 6] as KeptIds),
      })
    }
  }
}

/**
 * A bounded, in-memory journal that also tells listeners of each successful change. Entries are
 * kept per tenant (calls whose key did not authenticate together as one more): at most
 * `perTenant` of one tenant, whose next entry evicts its own oldest, and `capacity` in all, where
 * the next entry evicts the oldest entry of the tenant holding the most. So a tenant that floods the
 * journal evicts only its own entries, and a quiet tenant's survive. A listener that throws is
 * ignored (it never fails the call it observes).
 */
export class Journal implements OperationJournal {
  private readonly byTenant = new Map<string | null, Entries>()
  /** The tenants' entries filed by how many each holds: the journal full, the largest at once. */
  private readonly bySize = new BySize<Entries>()
  private total = 0
  private seq = 0
  private readonly listeners = new Set<(event: VaultEvent) => void>()
  readonly perTenant: number

  constructor(
    readonly capacity: number,
    perTenant = Math.min(DEFAULT_JOURNAL_SIZE_PER_TENANT, capacity),
  ) {
    if (!Number.isSafeInteger(capacity) || capacity < 0) {
      throw new TypeError('createService: journalSize must be a whole number >= 0')
    }
    if (!Number.isSafeInteger(perTenant) || perTenant < 0) {
      throw new TypeError('createService: journalSizePerTenant must be a whole number >= 0')
    }
    this.perTenant = Math.min(perTenant, capacity)
  }

  /** Keeps one more entry of `own`'s tenant, evicting as the class says. */
  private keep(
    own: Entries,
    seq: number,
    at: string,
    actor: Actor,
    operation: string,
    code: string | null,
    ids: KeptIds,
  ): void {
    if (own.size >= this.perTenant) {
      // The tenant's own oldest goes: its count stays as it was.
      own.shift()
      own.push(seq, at, actor, operation, code, ids)
      return
    }
    if (this.total >= this.capacity) {
      // The oldest entry of the tenant holding the most goes (the caller's own, when it is one of them).
      const largest = this.bySize.evictee(own, own.size)
      const size = largest.size
      largest.shift()
      this.total--
      this.bySize.moved(largest, size, size - 1)
      if (largest.size === 0 && largest !== own) this.byTenant.delete(largest.tenantId)
    }
    const size = own.size
    own.push(seq, at, actor, operation, code, ids)
    this.total++
    this.bySize.moved(own, size, size + 1)
  }

  record(entry: Omit<JournalEntry, 'seq'>): void {
    const { outcome, ids } = entry
    this.add(entry.at, entry.tenant_id, entry.actor, entry.operation, outcome.ok ? null : outcome.code, ids)
  }

  /**
   * Records one call from its parts (what `record` does without an entry object to build):
   * `code` null for success. Returns the entry's `seq`.
   */
  add(
    at: string,
    tenantId: string | null,
    actor: Actor,
    operation: string,
    code: string | null,
    touched: readonly string[],
  ): number {
    const seq = ++this.seq
    const ids = kept(touched)
    if (this.perTenant !== 0) {
      let own = this.byTenant.get(tenantId)
      if (!own) {
        own = new Entries(tenantId)
        this.byTenant.set(tenantId, own)
      }
      this.keep(own, seq, at, actor, operation, code, ids)
    }
    if (code !== null || this.listeners.size === 0) return seq
    const type = eventType(operation)
    if (type === null) return seq
    const event: VaultEvent = {
      type,
      at,
      tenant_id: tenantId,
      actor,
      ids: idsOf(ids),
    }
    for (const listener of this.listeners) {
      try {
        listener(event)
      } catch {}
    }
    return seq
  }

  on(listener: (event: VaultEvent) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  query(filter: JournalQuery = {}): JournalEntry[] {
    // Entries hold ISO times in UTC: a `since` in another offset compares by the instant it names.
    const from = filter.since === undefined ? undefined : parseDateTime(filter.since)
    if (from === null)
      throw new ServiceError('validation_failed', 'since: an ISO time', {
        issues: { since: ['an ISO time'] },
      })
    const out: JournalEntry[] = []
    const partitions =
      filter.tenant === undefined ? [...this.byTenant.values()] : [this.byTenant.get(filter.tenant)]
    const keep = (operation: string, at: string) =>
      (filter.operation === undefined || operation === filter.operation) && (from === undefined || at >= from)
    for (const entries of partitions) entries?.select(keep, out)
    if (partitions.length > 1) out.sort((a, b) => a.seq - b.seq)
    return filter.limit === undefined ? out : out.slice(-Math.max(0, filter.limit))
  }

  clear(): void {
    this.byTenant.clear()
    this.bySize.clear()
    this.total = 0
  }
}
