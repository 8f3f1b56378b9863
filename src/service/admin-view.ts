/**
 * What the host's operator may look at, read page by page and never in the clear: tenants, their
 * tokens under their masks, the open transactions with the tokens they lock, reactors with their
 * formula and last runs, applications without their keys, the audit log and the outbox's deliveries
 * (src/service/admin-view-records.ts). The test console shows these.
 */
import { applyTransform, shownApplication } from '../applications/index.js'
import type { LogView } from '../audit/index.js'
import type { Application, Json, Reactor, StoredToken, Tenant } from '../kernel/index.js'
import { invalid, notFound } from '../kernel/index.js'
import type { Store } from '../store/index.js'
import { allStaged } from '../transactions/index.js'
import {
  type DeliveryView,
  deliveriesPage,
  type LogViewQuery,
  logsPage,
  type ViewPage,
} from './admin-view-records.js'
import type { JournalEntry, OperationJournal } from './journal.js'

export type { ViewPage } from './admin-view-records.js'

/** A tenant as the view shows it: no data key. */
export interface TenantView {
  id: string
  name: string
  created_at: string
}

/** A token as the view shows it: `data` only as its mask renders it (absent without a mask). */
export interface TokenView {
  id: string
  type: string
  containers: string[]
  metadata: Record<string, string>
  /** The mask evaluated on the data; absent when the token has no mask or it can't be evaluated. */
  masked?: Json
  fingerprint?: string
  expires_at?: string
  created_at: string
  created_by: string
  /** The tokens it is linked to: its parents and its children. */
  links: { parents: string[]; children: string[] }
  /** The open transaction that holds the token, if one does. */
  locked_by?: string
}

/** An open transaction: who opened it, until when, and the tokens it locks. */
export interface TransactionView {
  id: string
  created_at: string
  created_by: string
  expires_at: string
  /** Ids of the tokens it holds until it ends or expires. */
  locks: string[]
  /** How many tokens it has staged a write over. */
  staged: number
}

/** A reactor: its formula (or its own code), the names of its configuration (never the values), its last runs. */
export interface ReactorView {
  id: string
  name: string
  formula: { id: string; name: string | null } | null
  /** The reactor's own code, when it has no formula. */
  code?: string
  application_id?: string
  /** The configuration's names: its values may be credentials. */
  configuration_keys: string[]
  created_at: string
  /** Its latest runs from the journal (newest first, at most `RUNS_SHOWN`). */
  runs: { at: string; outcome: string }[]
}

/** A page of an offset-paged list. */
export interface CountedPage<T> {
  data: T[]
  total: number
}

/** The operator's read-only view of the vault (`service.admin.view`). */
export interface AdminView {
  /** Every tenant, ordered by id. */
  tenants(): Promise<TenantView[]>
  /**
   * A page of the tenant's live tokens, ordered by id, at most `size` (1–100), after the cursor
   * `start` (a `next` this method answered). Token data is never in it: only what the mask shows.
   */
  tokens(tenantId: string, query?: { start?: string; size?: number }): Promise<ViewPage<TokenView>>
  /**
   * The tenant's open transactions (those past their expiry included until the sweep ends them),
   * at most `OPEN_READ` read across all tenants: `truncated` when there may be more.
   */
  transactions(tenantId: string): Promise<{ data: TransactionView[]; truncated: boolean }>
  /** A page of the tenant's reactors in creation order (`offset`, `limit` 1–100). */
  reactors(tenantId: string, query?: { offset?: number; limit?: number }): Promise<CountedPage<ReactorView>>
  /** A page of the tenant's applications in creation order, with their permissions and rules, never keys. */
  applications(
    tenantId: string,
    query?: { offset?: number; limit?: number },
  ): Promise<CountedPage<Application>>
  /**
   * A page of the tenant's audit log, newest first, filtered as `GET /logs` filters (`entity_type`,
   * with it `entity_id`; `start_date`, `end_date`), `size` 1–100 after the cursor `start` (a `next`
   * this method answered).
   * Entries hold ids, names and outcomes, never token data.
   */
  logs(tenantId: string, query?: LogViewQuery): Promise<ViewPage<LogView>>
  /**
   * A page of the tenant's deliveries (webhook events, callbacks, asynchronous reacts) in the order
   * its writes made them, `size` 1–100 after the delivery id `after`: each with its state and every
   * attempt's outcome; a callback's or react's body withheld (see `DeliveryView`).
   */
  deliveries(tenantId: string, query?: { after?: string; size?: number }): Promise<ViewPage<DeliveryView>>
}

/** How many open transactions (of all tenants) one `transactions` call reads at most. */
export const OPEN_READ = 1000
/** How many of its runs a reactor lists. */
export const RUNS_SHOWN = 5
const END_OF_TIME = '9999-12-31T23:59:59.999Z'

/** The cursor of the page after token `id`, which stood at position `at` (a hint: re-found if it moved). */
function cursor(at: number, id: string): string {
  return Buffer.from(`${at}:${id}`, 'utf8').toString('base64url')
}

function readCursor(start: string): { at: number; id: string } {
  const text = /^[A-Za-z0-9_-]{1,600}$/.test(start) ? Buffer.from(start, 'base64url').toString('utf8') : ''
  const match = /^(\d{1,15}):(.+)$/s.exec(text)
  if (!match || cursor(Number(match[1]), match[2]!) !== start)
    throw invalid('start', 'is not a cursor this view answered')
  return { at: Number(match[1]), id: match[2]! }
}

function size(value: number | undefined, field: string, fallback: number): number {
  if (value === undefined) return fallback
  if (!Number.isSafeInteger(value) || value < 1 || value > 100) throw invalid(field, 'must be 1 to 100')
  return value
}

function offset(value: number | undefined): number {
  if (value === undefined) return 0
  if (!Number.isSafeInteger(value) || value < 0) throw invalid('offset', 'must be a whole number >= 0')
  return value
}

/** The tenant `id`, or `not_found`. */
async function requireTenant(store: Store, id: string): Promise<Tenant> {
  if (typeof id !== 'string') throw notFound('tenant')
  const found = await store.getTenant(id)
  if (!found) throw notFound('tenant')
  return found
}

/**
 * Where the first token after `id` stands in the id order: `hint` when the token there is still
 * `id`'s successor (one read), else a binary search over positions (one small read each).
 */
async function positionAfter(
  store: Store,
  tenantId: string,
  id: string,
  hint: number,
  at: string,
): Promise<number> {
  const idAt = async (position: number) =>
    (await store.listTokens(tenantId, { offset: position, limit: 1, now: at })).items[0]?.id
  if (hint > 0 && (await idAt(hint - 1)) === id) return hint
  let low = 0
  let high = (await store.listTokens(tenantId, { offset: 0, limit: 0, now: at })).total
  while (low < high) {
    const middle = Math.floor((low + high) / 2)
    const found = await idAt(middle)
    if (found !== undefined && found <= id) low = middle + 1
    else high = middle
  }
  return low
}

/** The tenant's open transactions, oldest first, from at most `OPEN_READ` read across all tenants. */
async function openTransactions(store: Store, tenantId: string) {
  const keys = await store.listExpired({ kind: 'transaction.open', before: END_OF_TIME, limit: OPEN_READ })
  const data: TransactionView[] = []
  for (const key of keys) {
    if (key.tenant_id !== tenantId) continue
    const t = await store.getTransaction(tenantId, key.id)
    if (t?.state !== 'open') continue
    const staged = await allStaged(store, t)
    data.push({
      id: t.id,
      created_at: t.created_at,
      created_by: t.created_by,
      expires_at: t.expires_at,
      locks: staged.map((w) => w.token_id),
      staged: staged.length,
    })
  }
  data.sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0))
  return { data, truncated: keys.length >= OPEN_READ }
}

/** A token as the view shows it: masked, with its links and the open transaction holding it. */
async function tokenView(store: Store, token: StoredToken, holders: Map<string, string>): Promise<TokenView> {
  const masked = applyTransform(token, 'mask')
  const links = await store.listLinks(token.tenant_id, token.id)
  const view: TokenView = {
    id: token.id,
    type: token.type,
    containers: token.containers,
    metadata: token.metadata,
    created_at: token.created_at,
    created_by: token.created_by,
    links: {
      parents: links.filter((l) => l.child_id === token.id).map((l) => l.parent_id),
      children: links.filter((l) => l.parent_id === token.id).map((l) => l.child_id),
    },
  }
  if (masked.data !== undefined) view.masked = masked.data
  if (token.fingerprint !== undefined) view.fingerprint = token.fingerprint
  if (token.expires_at !== undefined) view.expires_at = token.expires_at
  const holder = holders.get(token.id)
  if (holder !== undefined) view.locked_by = holder
  return view
}

/** A page of the tenant's live tokens (see `AdminView.tokens`). */
async function tokensPage(
  store: Store,
  tenantId: string,
  query: { start?: string; size?: number },
  at: string,
): Promise<ViewPage<TokenView>> {
  const limit = size(query.size, 'size', 20)
  const from = query.start === undefined ? undefined : readCursor(query.start)
  const position = from === undefined ? 0 : await positionAfter(store, tenantId, from.id, from.at, at)
  const page = await store.listTokens(tenantId, { offset: position, limit: limit + 1, now: at })
  const shown = page.items.slice(0, limit)
  const holders = new Map<string, string>()
  if (shown.length) {
    for (const t of (await openTransactions(store, tenantId)).data)
      for (const id of t.locks) holders.set(id, t.id)
  }
  const data: TokenView[] = []
  for (const token of shown) data.push(await tokenView(store, token, holders))
  const last = shown[shown.length - 1]
  return page.items.length > limit && last
    ? { data, next: cursor(position + shown.length, last.id) }
    : { data }
}

/** A reactor as the view shows it: its formula's name, its configuration's names, its last runs. */
async function reactorView(store: Store, r: Reactor, runs: JournalEntry[]): Promise<ReactorView> {
  const formula =
    r.formula_id === undefined
      ? null
      : { id: r.formula_id, name: (await store.getFormula(r.tenant_id, r.formula_id))?.name ?? null }
  const view: ReactorView = {
    id: r.id,
    name: r.name,
    formula,
    configuration_keys: Object.keys(r.configuration),
    created_at: r.created_at,
    runs: runs
      .filter((e) => e.ids.includes(r.id))
      .slice(-RUNS_SHOWN)
      .reverse()
      .map((e) => ({ at: e.at, outcome: e.outcome.ok ? 'ok' : e.outcome.code })),
  }
  if (r.code !== undefined) view.code = r.code
  if (r.application_id !== undefined) view.application_id = r.application_id
  return view
}

/**
 * The view over `store` (the service's sealed store: tokens come out opened, and only their masks
 * leave), with time from `now` and reactor runs from `journal`.
 */
export function adminView(store: Store, now: () => string, journal: OperationJournal): AdminView {
  return {
    async tenants() {
      return (await store.listTenants()).map(({ id, name, created_at }) => ({ id, name, created_at }))
    },

    async tokens(tenantId, query = {}) {
      await requireTenant(store, tenantId)
      return tokensPage(store, tenantId, query, now())
    },

    async transactions(tenantId) {
      await requireTenant(store, tenantId)
      return openTransactions(store, tenantId)
    },

    async reactors(tenantId, query = {}) {
      await requireTenant(store, tenantId)
      const page = await store.listReactors(tenantId, {
        offset: offset(query.offset),
        limit: size(query.limit, 'limit', 20),
      })
      const runs = journal.query({ tenant: tenantId, operation: 'reactor.react' })
      const data: ReactorView[] = []
      for (const r of page.items) data.push(await reactorView(store, r, runs))
      return { data, total: page.total }
    },

    async applications(tenantId, query = {}) {
      await requireTenant(store, tenantId)
      const page = await store.listApplications(tenantId, {
        offset: offset(query.offset),
        limit: size(query.limit, 'limit', 20),
      })
      return { data: page.items.map(shownApplication), total: page.total }
    },

    async logs(tenantId, query = {}) {
      await requireTenant(store, tenantId)
      return logsPage(store, tenantId, query)
    },

    async deliveries(tenantId, query = {}) {
      await requireTenant(store, tenantId)
      return deliveriesPage(store, tenantId, query)
    },
  }
}
