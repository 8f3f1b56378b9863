import type { LogEntry } from '../kernel/index.js'
import { hasControlCharacter } from '../kernel/index.js'
import type { Op, WriteEffectContext } from '../store/index.js'

/** An entry before it takes its place in a chain: every field but `id`, `lane`, `seq`, `floor`, `mac`. */
export type EntryDraft = Omit<LogEntry, 'id' | 'lane' | 'seq' | 'floor' | 'mac'>

/** What an entry is about: an entity type and, when one record, its id. */
interface Entity {
  type: string
  id?: string
  /** What the op did to it, named in the message. */
  change: string
}

/** The verb of an operation name (`token.create` → `create`), reads named `read` as the reference does. */
export function verbOf(operation: string): string {
  const last = operation.slice(operation.lastIndexOf('.') + 1)
  if (last === 'get' || last.startsWith('list') || last.startsWith('search') || last === 'self') return 'read'
  return last
}

/** The entity type of an operation name (`token.child.create` → `token`, `reactor_formula.get`). */
export function entityTypeOf(operation: string): string {
  const dot = operation.indexOf('.')
  return dot < 0 ? operation : operation.slice(0, dot)
}

/**
 * What an op changes, as an audit entry names it; null for the records the core keeps for itself
 * (locks, formula uses, idempotency records, outbox entries, the log's own entries). An op kind
 * not listed here is logged by its prefix, so a new record kind is never silently left out.
 */
function entityOfOp(op: Op, context: WriteEffectContext): Entity | null {
  switch (op.op) {
    case 'tenant.put':
      // A tenant's audit key is made from the key its first record carries: the entry of its
      // creation follows that write (see `logTenantCreated`); its later changes ride in theirs.
      return context.operation === 'tenant.create'
        ? null
        : { type: 'tenant', id: op.tenant.id, change: 'put' }
    case 'tenant.delete':
      return { type: 'tenant', id: op.id, change: 'deleted' }
    case 'application.put':
      return { type: 'application', id: op.application.id, change: 'put' }
    case 'token.put':
      return { type: 'token', id: op.token.id, change: 'put' }
    case 'token.delete':
      return { type: 'token', id: op.id, change: 'deleted' }
    case 'association.put':
      return {
        type: 'token',
        id: op.association.parent_id,
        change: `linked child ${op.association.child_id}`,
      }
    case 'association.delete':
      return { type: 'token', id: op.parent_id, change: `unlinked child ${op.child_id}` }
    case 'transaction.put':
      return { type: 'transaction', id: op.transaction.id, change: `put (${op.transaction.state})` }
    case 'staged.put':
      return {
        type: 'token',
        id: op.staged.token_id,
        change: `staged in transaction ${op.staged.transaction_id}`,
      }
    case 'session.put':
      return { type: 'session', id: op.session.id, change: `put (${op.session.state})` }
    case 'formula.put':
      return { type: 'reactor_formula', id: op.formula.id, change: 'put' }
    case 'reactor.put':
      return { type: 'reactor', id: op.reactor.id, change: 'put' }
    case 'document.put':
      return { type: 'document', id: op.document.id, change: `put (${op.document.state})` }
    // A document's chunks are logged by its head's entries (one per upload, not one per 64 KiB).
    case 'document_chunk.put':
      return null
    case 'lock.put':
    case 'lock.delete':
    case 'staged.delete':
    case 'formula_use.put':
    case 'formula_use.delete':
    case 'idempotency.put':
    case 'idempotency.delete':
    case 'outbox.put':
    case 'outbox.delete':
    case 'log.put':
    case 'log.delete':
      return null
    default:
      return deletedOrOther(op)
  }
}

/** The deletes named `{ tenant_id, id }`, and any op kind added later: by its prefix and `id` when it has one. */
function deletedOrOther(op: Op): Entity {
  const [prefix = op.op, action = ''] = op.op.split('.')
  const type = prefix === 'formula' ? 'reactor_formula' : prefix
  const id = (op as { id?: unknown }).id
  return { type, ...(typeof id === 'string' ? { id } : {}), change: action === 'delete' ? 'deleted' : action }
}

/**
 * One entry's draft, built in one shape (no spreads: it runs for every entry of every call).
 * Optional fields are set only when present, as `exactOptionalPropertyTypes` wants.
 */
function draft(
  context: WriteEffectContext,
  tenantId: string,
  outcome: string,
  entityType: string,
  entityId: string | undefined,
  message: string,
): EntryDraft {
  const d: EntryDraft = {
    tenant_id: tenantId,
    actor_type: context.actorType,
    entity_type: entityType,
    operation: verbOf(context.operation),
    message,
    outcome,
    created_at: context.now,
  }
  if (context.actorId !== null) d.actor_id = context.actorId
  if (entityId !== undefined) d.entity_id = entityId
  if (context.requestId !== null) d.request_id = context.requestId
  return d
}

/**
 * The entries of a write: one per op that changes tenant data or access, in the tenant the op
 * names (a write may touch several tenants: the admin's). Only ids and op names: never a value.
 */
export function entriesOfWrite(context: WriteEffectContext, ops: readonly Op[]): EntryDraft[] {
  const out: EntryDraft[] = []
  for (const op of ops) {
    const entity = entityOfOp(op, context)
    const tenantId = tenantOfOp(op) ?? context.tenantId
    if (!entity || !tenantId) continue
    out.push(
      draft(
        context,
        tenantId,
        'success',
        entity.type,
        entity.id,
        `${context.operation}: ${entity.type} ${entity.change}`,
      ),
    )
  }
  return out
}

/** The tenant an op writes in, read from the record or key it names. */
function tenantOfOp(op: Op): string | null {
  if (op.op === 'tenant.put') return op.tenant.id
  if (op.op === 'tenant.delete') return op.id
  for (const value of Object.values(op)) {
    if (
      value &&
      typeof value === 'object' &&
      typeof (value as { tenant_id?: unknown }).tenant_id === 'string'
    ) {
      return (value as { tenant_id: string }).tenant_id
    }
  }
  const direct = (op as { tenant_id?: unknown }).tenant_id
  return typeof direct === 'string' ? direct : null
}

/** Most entries one call that wrote nothing gets (one per id it answered); past it, one entry names the rest by count. */
export const MAX_CALL_ENTRIES = 100

/**
 * The entries of a call that wrote nothing (a read, a refused call, a replayed answer): one per
 * id it read or answered, or one naming no record. `revealed`: the tokens whose plaintext left in
 * the call (a revealed read, detokenize, a react's arguments): their entries say `revealed`, those
 * of the other tokens it answered `masked` (shown under their mask, or without data); a revealed
 * token the call did not answer by id (detokenize, react) gets an entry of its own.
 */
export function entriesOfCall(
  context: WriteEffectContext,
  ids: readonly string[],
  outcome: string,
  revealed?: ReadonlySet<string>,
): EntryDraft[] {
  const type = entityTypeOf(context.operation)
  const tenantId = context.tenantId ?? ''
  const verb = outcome === 'success' ? 'answered' : `refused (${outcome})`
  const message = `${context.operation}: ${verb}`
  const shownRevealed = revealed?.size ? revealed : undefined
  const all = shownRevealed ? [...new Set([...ids, ...shownRevealed])] : ids
  if (!all.length) return [draft(context, tenantId, outcome, type, undefined, message)]
  const answered = shownRevealed && new Set(ids)
  const shown = all.length > MAX_CALL_ENTRIES ? all.slice(0, MAX_CALL_ENTRIES) : all
  const out = shown.map((id) => {
    const entityType = shownRevealed?.has(id) && !answered?.has(id) ? 'token' : type
    const how =
      outcome !== 'success' || entityType !== 'token' ? '' : shownRevealed?.has(id) ? ' revealed' : ' masked'
    return draft(context, tenantId, outcome, entityType, id, `${message}${how}`)
  })
  if (all.length > shown.length) {
    const rest = `${message}, ${all.length - shown.length} more ids not listed`
    out.push(draft(context, tenantId, outcome, type, undefined, rest))
  }
  return out
}

/**
 * How many of an operation's first arguments are ids from a route's path. Only those are logged as
 * ids: the argument after them is a body or a query, whatever its type (a JSON string body — a
 * card number sent to `/tokenize` — is a string too, and is never an entity id). An operation not
 * listed has none.
 */
const PATH_IDS: Readonly<Record<string, 1 | 2>> = {
  'token.get': 1,
  'token.update': 1,
  'token.delete': 1,
  'token.child.create': 1,
  'token.child.list': 1,
  'token.child.link': 2,
  'token.child.unlink': 2,
  'transaction.commit': 1,
  'transaction.rollback': 1,
  'application.get': 1,
  'application.update': 1,
  'application.regenerate_key': 1,
  'application.delete': 1,
  'application_key.create': 1,
  'application_key.list': 1,
  'application_key.get': 2,
  'application_key.delete': 2,
  'reactor_formula.get': 1,
  'reactor_formula.update': 1,
  'reactor_formula.delete': 1,
  'reactor.get': 1,
  'reactor.update': 1,
  'reactor.patch': 1,
  'reactor.delete': 1,
  'reactor.react': 1,
  'reactor.react_async': 1,
  'reactor.result': 2,
  'webhook.get': 1,
  'webhook.update': 1,
  'webhook.delete': 1,
  'key.get': 1,
  'key.delete': 1,
  'token_intent.get': 1,
  'token_intent.delete': 1,
  'document.get': 1,
  'document.data': 1,
  'document.delete': 1,
  'proxy.get': 1,
  'proxy.update': 1,
  'proxy.patch': 1,
  'proxy.delete': 1,
}

/**
 * The most characters an id an entry names may have: the longest id a record can have (a token's
 * own id). A path id longer than any id names nothing, and is not kept.
 */
const MAX_ENTITY_ID_LENGTH = 200

/** Whether `id` can name a record: 1 to `MAX_ENTITY_ID_LENGTH` characters, none a control character. */
const namesRecord = (id: unknown): id is string =>
  typeof id === 'string' && id.length > 0 && id.length <= MAX_ENTITY_ID_LENGTH && !hasControlCharacter(id)

/**
 * Operations whose answer is shaped by the caller or by tenant code, not a record: a detokenize's
 * answer is the caller's body with token data in it (`{"id": "{{ token }}"}` answers the card
 * number as `id`), a tokenize's the caller's body, a react's and a proxy's what the formula or the
 * destination made. No id is read from them: the tokens they read are logged by the call itself
 * (`revealed`), and their path ids as every operation's.
 */
const SHAPED_ANSWERS: ReadonlySet<string> = new Set([
  'token.detokenize',
  'token.tokenize',
  'reactor.react',
  'reactor.result',
  'proxy.invoke',
])

/**
 * The ids a call read or answered, without looking into any token's `data` or any body: the ids
 * its path gave (`PATH_IDS`), the id of the record answered, and the ids of a page's records; each
 * one that can name a record (`namesRecord`), so no value an entry keeps is longer than an id.
 */
export function answeredIds(operation: string, args: readonly unknown[], result: unknown): string[] {
  const ids = new Set<string>()
  const pathIds = PATH_IDS[operation] ?? 0
  for (let i = 0; i < pathIds; i++) if (namesRecord(args[i])) ids.add(args[i] as string)
  if (result && typeof result === 'object' && !Array.isArray(result) && !SHAPED_ANSWERS.has(operation)) {
    const r = result as { id?: unknown; pagination?: unknown; data?: unknown; application?: { id?: unknown } }
    if (namesRecord(r.id)) ids.add(r.id)
    if (namesRecord(r.application?.id)) ids.add(r.application.id)
    // A page (`{ pagination, data: [...] }`): its records' ids. A token's own `data` is never read.
    if (r.pagination && Array.isArray(r.data)) {
      for (const item of r.data) {
        const id = (item as { id?: unknown } | null)?.id
        if (namesRecord(id)) ids.add(id)
      }
    }
  }
  return [...ids]
}
