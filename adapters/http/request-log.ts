import type { AccessDecision, AccessTrace, CallRecorder } from '../../src/kernel/index.js'

/** The problem document an exchange answered, as sent (never data: problems hold none). */
export interface LoggedProblem {
  type?: string
  title?: string
  status?: number
  detail?: string
  /** A 400's fields, each with its messages. */
  errors?: Record<string, unknown>
}

/** What an entry is: an API exchange, an injected fault's answer, or a control-plane call. */
export type ExchangeKind = 'api' | 'fault' | 'control'

/**
 * One HTTP exchange of a test-mode server, keyed by its request id: what it asked (method, path,
 * the names of its query parameters, never their values), what it answered (status, the problem
 * document), who asked (tenant and application ids), the journal entries it made, and, for a
 * refused or masked read, the access decisions' traces. Never token data, a key, a nonce, a body
 * or a query value.
 */
export interface RequestLogEntry {
  /** Position in the log (increasing from 1). */
  seq: number
  request_id: string
  kind: ExchangeKind
  /** The service clock's time when the request came (the test clock: it moves only when told). */
  at: string
  /** The wall-clock time when the request came, ISO 8601: orders rows the test clock does not. */
  wall: string
  method: string
  /** The path, without the query string. */
  path: string
  /** The names of the query's parameters, never their values. */
  query_keys: string[]
  status: number
  /** From the request to the answer being ready, in milliseconds. */
  ms: number
  tenant_id: string | null
  /** The application or session that called, when its key authenticated. */
  actor_id: string | null
  /** The service operations the exchange ran (`token.get`), in order. */
  operations: string[]
  /** The journal entries it made (their `seq`). */
  journal: number[]
  problem?: LoggedProblem
  /** The access decisions the exchange made that refused or did not reveal (at most `TRACES_KEPT`). */
  trace?: AccessTrace[]
  /** The injected fault that answered (kind `fault`). */
  fault?: { id: number; method: string; path: string; status: number }
  /** The name of the latest `mark` before the exchange (`POST /_test/mark`), grouping a test's rows. */
  mark?: string
}

/** Options of `requestLog`. */
export interface RequestLogOptions {
  /** The service clock (the test clock). */
  now: () => Date
  /** Entries kept in all (the oldest of the largest tenant go first). @default 1000 */
  capacity?: number
  /** Entries kept of one tenant (its own oldest go first); unauthenticated and control calls count as one tenant. @default 500 */
  perTenant?: number
}

/**
 * What the handler gathers while one exchange runs, and then what the log keeps of it: raw fields
 * and references (clock times as numbers, the evaluator's decisions unexplained), the entry's view
 * built only when the log is read. It is the recorder its client is given (`recorder`).
 *
 * One object an exchange: its first journal entry and first decision are fields of its own (an
 * exchange usually makes one of each, or none), and only the ones after them go to arrays.
 */
export class ExchangeWitness implements CallRecorder {
  tenant_id: string | null = null
  actor_id: string | null = null
  /** The first journal entry's `seq` and operation (0 and null: none yet). */
  seq0 = 0
  operation0: string | null = null
  /** The journal entries after the first, `seq` then operation by turns. */
  more: (number | string)[] | null = null
  /** The first decision kept (null: none), and those after it (at most `TRACES_KEPT` in all). */
  decision0: AccessDecision | null = null
  decisions: AccessDecision[] | null = null
  /** Set by `finish`: the exchange's own fields (never its body, nor its query's values). */
  seq = 0
  request_id = ''
  kind: ExchangeKind = 'api'
  method = ''
  path = ''
  queryKeys: string[] | null = null
  status = 0
  /** Unrounded: rounded to the µs when read. */
  ms = 0
  problem: LoggedProblem | undefined = undefined
  fault: RequestLogEntry['fault'] = undefined
  mark: string | undefined = undefined

  constructor(
    /** The service clock's time when the request came, in ms since the epoch. */
    readonly at: number,
    /** The wall clock's, likewise. */
    readonly wall: number,
  ) {}

  /** The recorder to give the exchange's client: the witness itself. */
  get recorder(): CallRecorder {
    return this
  }

  decided(decision: AccessDecision): void {
    // Reveals are not what a failing test asks about; refusals and masks are.
    if (decision.decision === 'reveal') return
    if (this.decision0 === null) {
      this.decision0 = decision
      return
    }
    this.decisions ??= []
    const kept = this.decisions
    // The last decision is kept whatever came before: a refusal ends the call.
    if (kept.length < TRACES_KEPT - 1) kept.push(decision)
    else kept[TRACES_KEPT - 2] = decision
  }

  journaled(entry: {
    seq: number
    tenant_id: string | null
    actor_id: string | null
    operation: string
  }): void {
    if (this.operation0 === null) {
      this.seq0 = entry.seq
      this.operation0 = entry.operation
    } else {
      this.more ??= []
      this.more.push(entry.seq, entry.operation)
    }
    if (entry.tenant_id !== null) this.tenant_id = entry.tenant_id
    if (entry.actor_id !== null) this.actor_id = entry.actor_id
  }
}

/** The fields of an exchange the handler hands `RequestLog.finish`. */
export interface FinishedExchange {
  request_id: string
  kind: ExchangeKind
  method: string
  path: string
  search: string
  status: number
  ms: number
  /** The answer's body when it is a problem document (`application/problem+json`), else null. */
  problemBody: string | Uint8Array | null
  fault?: RequestLogEntry['fault']
}

/** Filters of `RequestLog.list`; all optional. */
export interface RequestLogQuery {
  /** Only entries after this `seq`. */
  after?: number
  tenant?: string
  /** Failures only (status 400 or more). */
  failed?: boolean
  mark?: string
  /** The newest this many. */
  limit?: number
}

/** How many traces one entry keeps (a list decides once per token). */
export const TRACES_KEPT = 20
/** The longest query parameter name kept, and how many names. */
const QUERY_KEY_CHARS = 64
const QUERY_KEYS_KEPT = 16
const NULL_TENANT = '\u0000none'

/**
 * One tenant's kept exchanges, oldest first: a ring of slots, grown by doubling up to the bound
 * (then allocated once), so keeping an exchange and evicting the oldest each cost one slot write.
 */
class Ring {
  private slots: (ExchangeWitness | undefined)[] = new Array(8)
  private head = 0
  length = 0

  constructor(private readonly bound: number) {}

  push(item: ExchangeWitness): void {
    if (this.length === this.slots.length) this.grow()
    this.slots[(this.head + this.length) % this.slots.length] = item
    this.length++
  }

  shift(): ExchangeWitness | undefined {
    if (this.length === 0) return undefined
    const item = this.slots[this.head]
    this.slots[this.head] = undefined
    this.head = (this.head + 1) % this.slots.length
    this.length--
    return item
  }

  /** The `i`th oldest. */
  at(i: number): ExchangeWitness {
    return this.slots[(this.head + i) % this.slots.length]!
  }

  private grow(): void {
    const size = Math.min(Math.max(8, this.slots.length * 2), Math.max(this.bound, this.length + 1))
    const slots: (ExchangeWitness | undefined)[] = new Array(size)
    for (let i = 0; i < this.length; i++) slots[i] = this.at(i)
    this.slots = slots
    this.head = 0
  }
}

/**
 * The request log of a test-mode server: bounded per tenant like the journal (a tenant's flood
 * evicts only its own oldest entries), readable by `GET /_test/requests`, the console and the test
 * kit. Listeners (`on`) are told each new entry (the console's live stream).
 *
 * Recording is cheap and reading does the work: an exchange is kept as its witness (raw fields,
 * the evaluator's decisions unexplained) in its tenant's ring; the entry (ISO times, traces) is
 * built when the log is read, or when a listener is told.
 */
export class RequestLog {
  readonly capacity: number
  readonly perTenant: number
  private seq = 0
  private total = 0
  private currentMark: string | undefined
  private readonly byTenant = new Map<string, Ring>()
  private readonly listeners = new Set<(entry: RequestLogEntry) => void>()

  constructor(private readonly options: RequestLogOptions) {
    this.capacity = Math.max(1, options.capacity ?? 1000)
    this.perTenant = Math.max(1, Math.min(options.perTenant ?? 500, this.capacity))
  }

  /** Starts watching one exchange: give `witness.recorder` to the client it calls. */
  begin(): ExchangeWitness {
    return new ExchangeWitness(this.options.now().getTime(), Date.now())
  }

  /** Records the exchange `witness` watched (or one no client saw: `witness` absent). */
  finish(exchange: FinishedExchange, witness: ExchangeWitness = this.begin()): void {
    witness.seq = ++this.seq
    witness.request_id = exchange.request_id
    witness.kind = exchange.kind
    witness.method = exchange.method
    witness.path = exchange.path
    if (exchange.search !== '') witness.queryKeys = queryKeys(exchange.search)
    witness.status = exchange.status
    witness.ms = exchange.ms
    if (exchange.problemBody !== null)
      witness.problem = problemOf(exchange.problemBody, queryValues(exchange.search))
    if (exchange.fault) witness.fault = exchange.fault
    witness.mark = this.currentMark
    this.keep(witness)
    if (this.listeners.size === 0) return
    const entry = entryOf(witness)
    for (const listener of this.listeners) {
      try {
        listener(entry)
      } catch {}
    }
  }

  /** Keeps `kept`, evicting its tenant's oldest past `perTenant`, and the largest tenant's oldest past `capacity`. */
  private keep(kept: ExchangeWitness): void {
    const key = kept.tenant_id ?? NULL_TENANT
    let own = this.byTenant.get(key)
    if (!own) {
      own = new Ring(this.perTenant)
      this.byTenant.set(key, own)
    }
    if (own.length >= this.perTenant) this.drop(key, own)
    else if (this.total >= this.capacity) {
      let largest = own
      let largestKey = key
      for (const [k, ring] of this.byTenant) {
        if (ring.length > largest.length) {
          largest = ring
          largestKey = k
        }
      }
      this.drop(largestKey, largest)
    }
    own.push(kept)
    this.total++
  }

  private drop(key: string, ring: Ring): void {
    if (ring.shift() === undefined) return
    this.total--
    if (ring.length === 0) this.byTenant.delete(key)
  }

  /** The entry of `requestId` (the latest with that id), if still kept. */
  get(requestId: string): RequestLogEntry | undefined {
    let found: ExchangeWitness | undefined
    for (const ring of this.byTenant.values()) {
      for (let i = ring.length - 1; i >= 0; i--) {
        const kept = ring.at(i)
        if (kept.request_id !== requestId) continue
        if (found === undefined || kept.seq > found.seq) found = kept
        break
      }
    }
    return found && entryOf(found)
  }

  /** Kept entries passing `query`, oldest first. */
  list(query: RequestLogQuery = {}): RequestLogEntry[] {
    const rings = query.tenant === undefined ? [...this.byTenant.values()] : [this.byTenant.get(query.tenant)]
    const out: ExchangeWitness[] = []
    for (const ring of rings) {
      for (let i = 0; i < (ring?.length ?? 0); i++) {
        const e = ring!.at(i)
        if (query.after !== undefined && e.seq <= query.after) continue
        if (query.failed === true && e.status < 400) continue
        if (query.mark !== undefined && e.mark !== query.mark) continue
        out.push(e)
      }
    }
    out.sort((a, b) => a.seq - b.seq)
    return (query.limit === undefined ? out : out.slice(-query.limit)).map(entryOf)
  }

  /** Starts a named group: entries from now on carry `mark: name` (until the next mark or `clear`). */
  mark(name: string): void {
    this.currentMark = name
  }

  /** Forgets every entry and the mark (the sequence goes on). */
  clear(): void {
    this.byTenant.clear()
    this.total = 0
    this.currentMark = undefined
  }

  /** Tells `listener` of each new entry; returns the function that stops it. */
  on(listener: (entry: RequestLogEntry) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** How many entries are kept. */
  get size(): number {
    return this.total
  }
}

/** The entry of a kept exchange, built when read: its times in ISO 8601, its decisions' traces. */
function entryOf(kept: ExchangeWitness): RequestLogEntry {
  const operations: string[] = []
  const journal: number[] = []
  if (kept.operation0 !== null) {
    operations.push(kept.operation0)
    journal.push(kept.seq0)
  }
  const more = kept.more ?? []
  for (let i = 0; i < more.length; i += 2) {
    journal.push(more[i] as number)
    operations.push(more[i + 1] as string)
  }
  const entry: RequestLogEntry = {
    seq: kept.seq,
    request_id: kept.request_id,
    kind: kept.kind,
    at: new Date(kept.at).toISOString(),
    wall: new Date(kept.wall).toISOString(),
    method: kept.method,
    path: kept.path,
    query_keys: kept.queryKeys === null ? [] : [...kept.queryKeys],
    status: kept.status,
    ms: Math.round(kept.ms * 1000) / 1000,
    tenant_id: kept.tenant_id,
    actor_id: kept.actor_id,
    operations,
    journal,
  }
  if (kept.problem) entry.problem = kept.problem
  if (kept.decision0 !== null) {
    entry.trace = [kept.decision0.trace()]
    for (const d of kept.decisions ?? []) entry.trace.push(d.trace())
  }
  if (kept.fault) entry.fault = kept.fault
  if (kept.mark !== undefined) entry.mark = kept.mark
  return entry
}

/** The names of a query string's parameters (never their values), bounded. */
function queryKeys(search: string): string[] {
  if (search === '') return []
  const keys: string[] = []
  for (const pair of search.split('&')) {
    const eq = pair.indexOf('=')
    let name = eq === -1 ? pair : pair.slice(0, eq)
    try {
      name = decodeURIComponent(name.replace(/\+/g, ' '))
    } catch {}
    name = name.slice(0, QUERY_KEY_CHARS)
    if (name !== '' && !keys.includes(name)) keys.push(name)
    if (keys.length >= QUERY_KEYS_KEPT) break
  }
  return keys
}

/** The query's values of at least 3 characters (shorter ones would blot out ordinary words). */
function queryValues(search: string): string[] {
  if (search === '') return []
  const values: string[] = []
  for (const pair of search.split('&')) {
    const eq = pair.indexOf('=')
    if (eq === -1) continue
    let value = pair.slice(eq + 1)
    try {
      value = decodeURIComponent(value.replace(/\+/g, ' '))
    } catch {}
    if (value.length >= 3) values.push(value)
  }
  return values
}

/** A value a validator quoted back (`received "…"`): the caller's input, which may be data. */
const QUOTED = /received ("(?:[^"\\]|\\.)*"|\S+)/g

/** `text` without the values a caller sent: quoted inputs and the query's values withheld. */
function withheld(text: string, values: readonly string[]): string {
  let out = text.replace(QUOTED, 'received (a value, withheld)')
  for (const value of values) out = out.split(value).join('(withheld)')
  return out
}

/** `value`'s strings (deeply) passed through `withheld`. */
function scrubbed(value: unknown, values: readonly string[]): unknown {
  if (typeof value === 'string') return withheld(value, values)
  if (Array.isArray(value)) return value.map((v) => scrubbed(v, values))
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [withheld(k, values), scrubbed(v, values)]),
    )
  return value
}

/**
 * The problem document of an answer's body, its known fields only, with what the caller sent
 * withheld: a validator's quoted input and the query's values (the client got them; the log keeps
 * none).
 */
function problemOf(body: string | Uint8Array, values: readonly string[]): LoggedProblem | undefined {
  let parsed: unknown
  try {
    parsed = JSON.parse(typeof body === 'string' ? body : Buffer.from(body).toString('utf8'))
  } catch {
    return undefined
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined
  const p = parsed as Record<string, unknown>
  const out: LoggedProblem = {}
  if (typeof p['type'] === 'string') out.type = p['type']
  if (typeof p['title'] === 'string') out.title = p['title']
  if (typeof p['status'] === 'number') out.status = p['status']
  if (typeof p['detail'] === 'string') out.detail = withheld(p['detail'], values)
  if (typeof p['errors'] === 'object' && p['errors'] !== null)
    out.errors = scrubbed(p['errors'], values) as Record<string, unknown>
  return out
}
