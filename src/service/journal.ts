import { parseDateTime, ServiceError } from '../kernel/index.js'
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

/** The journal of operations: the newest `capacity` entries, queryable, with change events. */
export interface OperationJournal {
  query(filter?: JournalQuery): JournalEntry[]
  /** Forgets every entry (the sequence goes on). */
  clear(): void
  readonly capacity: number
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
  if (error instanceof ServiceError) return { ok: false, code: error.code }
  if (error instanceof StoreError) return { ok: false, code: `store_${error.code}` }
  return { ok: false, code: 'internal' }
}

/**
 * A bounded, in-memory journal (a ring of `capacity` entries) that also tells listeners of each
 * successful change. A listener that throws is ignored (it never fails the call it observes).
 */
export class Journal implements OperationJournal {
  private readonly ring: (JournalEntry | undefined)[]
  private next = 0
  private seq = 0
  private readonly listeners = new Set<(event: VaultEvent) => void>()

  constructor(readonly capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 0) {
      throw new TypeError('createService: journalSize must be a whole number >= 0')
    }
    this.ring = new Array(capacity)
  }

  record(entry: Omit<JournalEntry, 'seq'>): void {
    const full: JournalEntry = { seq: ++this.seq, ...entry }
    if (this.capacity > 0) {
      this.ring[this.next] = full
      this.next = (this.next + 1) % this.capacity
    }
    if (!entry.outcome.ok || this.listeners.size === 0) return
    const type = eventType(entry.operation)
    if (type === null) return
    const event: VaultEvent = {
      type,
      at: entry.at,
      tenant_id: entry.tenant_id,
      actor: entry.actor,
      ids: entry.ids,
    }
    for (const listener of this.listeners) {
      try {
        listener(event)
      } catch {}
    }
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
    for (let i = 0; i < this.capacity; i++) {
      const e = this.ring[(this.next + i) % this.capacity]
      if (!e) continue
      if (filter.tenant !== undefined && e.tenant_id !== filter.tenant) continue
      if (filter.operation !== undefined && e.operation !== filter.operation) continue
      if (from !== undefined && e.at < from) continue
      out.push(e)
    }
    return filter.limit === undefined ? out : out.slice(-Math.max(0, filter.limit))
  }

  clear(): void {
    this.ring.fill(undefined)
    this.next = 0
  }
}
