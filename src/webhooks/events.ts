import type { Invocation } from '../call/index.js'
import type {
  JsonObject,
  OutboxEntry,
  StoredApplication,
  StoredProxy,
  StoredSession,
  StoredToken,
  StoredTokenIntent,
} from '../kernel/index.js'
import type { Check, Op, WriteBatch, WriteEffectContext } from '../store/index.js'

/**
 * Every event type of the reference's catalogue ("Webhook Event Data"), as `GET
 * /webhooks/event-types` answers: a webhook may subscribe to any of them. tokenvault sends those of
 * `SENT_EVENT_TYPES`; the others belong to features it does not have and are never sent.
 */
export const EVENT_TYPES = [
  '3ds.session.authenticated',
  '3ds.session.challenge-result-retrieved',
  '3ds.session.created',
  '3ds.session.method-completed',
  '3ds.session.challenge-completed',
  '3ds.session.decoupled-challenge-notification',
  'account-updater.job.completed',
  'account-updater.job.created',
  'account-updater.job.failed',
  'application.created',
  'application.updated',
  'application.deleted',
  'application.key.created',
  'application.key.deleted',
  'http.request',
  'proxy.created',
  'proxy.deleted',
  'proxy.invoked',
  'proxy.updated',
  'reactor.completed',
  'reactor.created',
  'reactor.deleted',
  'reactor.failed',
  'reactor.invoked',
  'reactor.updated',
  'session.authorized',
  'session.created',
  'tenant.created',
  'tenant.updated',
  'tenant.deleted',
  'tenant.invitation.accepted',
  'tenant.invitation.created',
  'tenant.invitation.deleted',
  'tenant.invitation.resent',
  'tenant.member.created',
  'tenant.member.deleted',
  'token.created',
  'token.deleted',
  'token.expired',
  'token.property.expired',
  'token.read',
  'token.updated',
  'token-intent.created',
  'token-intent.deleted',
  'token-intent.converted',
  'google-pay.created',
  'google-pay.deleted',
  'google-pay.retrieved',
] as const

/**
 * The event types tokenvault sends: derived from the writes that make them (`eventsOf`), or, for
 * those of a call that writes nothing of its own (a react, a proxy call, a token read), from the call
 * once it ended (`invocationEvents`, `token.read` in src/service/audit-calls.ts).
 */
export const SENT_EVENT_TYPES = [
  'token.created',
  'token.updated',
  'token.deleted',
  'token.expired',
  'application.created',
  'application.updated',
  'application.deleted',
  'application.key.created',
  'application.key.deleted',
  'reactor.created',
  'reactor.updated',
  'reactor.deleted',
  'reactor.invoked',
  'reactor.completed',
  'reactor.failed',
  'session.created',
  'session.authorized',
  'token-intent.created',
  'token-intent.deleted',
  'token-intent.converted',
  'proxy.created',
  'proxy.updated',
  'proxy.deleted',
  'proxy.invoked',
  'token.read',
] as const

/** An event a write makes, before it is addressed to any webhook: its tenant, type and data object. */
export interface DerivedEvent {
  tenantId: string
  type: (typeof SENT_EVENT_TYPES)[number]
  /** `event.data` without `actor`: `{ token: {…} }`, `{ application: {…} }`, …; never secret. */
  data: JsonObject
}

/** A token intent as events show it: as its API answers it, never `data`. */
function intentShown(i: StoredTokenIntent): JsonObject {
  const { data: _data, tenant_id: _tenant, ...shown } = i
  return shown as unknown as JsonObject
}

/**
 * The event of a token intent's delete: `token-intent.converted` in a token create (the token it
 * became named beside it), `token-intent.deleted` by its delete call; none by the sweep (the
 * reference has no event of an intent's expiry).
 */
function intentDeleted(
  context: WriteEffectContext,
  batch: Readonly<WriteBatch>,
  op: Extract<Op, { op: 'token_intent.delete' }>,
): DerivedEvent | null {
  const intent = { id: op.id }
  if (context.operation === 'token_intent.delete')
    return { tenantId: op.tenant_id, type: 'token-intent.deleted', data: { token_intent: intent } }
  const made = batch.ops.find((o): o is Extract<Op, { op: 'token.put' }> => o.op === 'token.put')
  if (context.operation !== 'token.create') return null
  const data: JsonObject = made
    ? { token: { id: made.token.id, type: made.token.type }, token_intent: intent }
    : { token_intent: intent }
  return { tenantId: op.tenant_id, type: 'token-intent.converted', data }
}

/**
 * A token as events show it: the reference's fields, never `data` or `mask`. The keys of each
 * record shown are put in sorted order, as the event's stored body has them (`eventBody`).
 */
function tokenShown(t: StoredToken, updated: boolean): JsonObject {
  const out: JsonObject = { containers: t.containers, created_at: t.created_at, created_by: t.created_by }
  if (t.expires_at !== undefined) out['expires_at'] = t.expires_at
  if (t.fingerprint !== undefined) out['fingerprint'] = t.fingerprint
  if (t.fingerprint_expression !== undefined) out['fingerprint_expression'] = t.fingerprint_expression
  out['id'] = t.id
  out['metadata'] = t.metadata
  if (updated && t.modified_at !== undefined) out['modified_at'] = t.modified_at
  if (updated && t.modified_by !== undefined) out['modified_by'] = t.modified_by
  if (t.search_indexes !== undefined) out['search_indexes'] = t.search_indexes
  out['type'] = t.type
  return out
}

/** An application as events show it: never its keys or their hashes. */
function applicationShown(a: StoredApplication): JsonObject {
  const out: JsonObject = { created_at: a.created_at }
  if (a.created_by !== undefined) out['created_by'] = a.created_by
  out['id'] = a.id
  if (a.modified_at !== undefined) out['modified_at'] = a.modified_at
  if (a.modified_by !== undefined) out['modified_by'] = a.modified_by
  out['name'] = a.name
  out['permissions'] = a.permissions
  if (a.rules !== undefined) out['rules'] = a.rules as unknown as JsonObject[]
  out['type'] = a.type
  return out
}

/** A session as events show it: never its key or nonce hashes. */
function sessionShown(s: StoredSession, authorized: boolean): JsonObject {
  const out: JsonObject = {
    created_at: s.created_at,
    created_by: s.application_id,
    expires_at: s.expires_at,
    id: s.id,
    issued_to_application: { id: s.application_id },
  }
  if (authorized) {
    out['permissions'] = s.permissions
    if (s.rules !== undefined) out['rules'] = s.rules as unknown as JsonObject[]
  }
  return out
}

/**
 * A pre-configured proxy as the reference's `proxy.created` and `proxy.updated` show it: never its
 * configuration (sealed, credentials) or transforms' code.
 */
function proxyShown(p: StoredProxy, updated: boolean): JsonObject {
  const out: JsonObject = { id: p.id, name: p.name }
  if (p.application_id !== undefined) out['application_id'] = p.application_id
  out['destination_url'] = p.destination_url
  out['require_authentication'] = p.require_auth
  out['created_at'] = p.created_at
  out['created_by'] = p.created_by
  if (updated && p.modified_at !== undefined) out['modified_at'] = p.modified_at
  if (updated && p.modified_by !== undefined) out['modified_by'] = p.modified_by
  return out
}

/** The ids of an application's keys (a record from before several keys holds one, named by the application's id). */
const keyIdsOf = (a: StoredApplication): string[] => (a.keys ? a.keys.map((k) => k.id) : [a.id])

/**
 * The event of an application key's create or delete (`application_key.create` / `.delete`): a
 * compare-and-set of the application record, so the key added or removed is the difference between
 * the record the write guards (`application.unchanged`) and the one it puts. Never the key or its hash.
 */
function keyEvent(
  context: WriteEffectContext,
  batch: Readonly<WriteBatch>,
  a: StoredApplication,
): DerivedEvent | null {
  const guard = (batch.checks ?? []).find(
    (c): c is Extract<Check, { check: 'application.unchanged' }> =>
      c.check === 'application.unchanged' && c.id === a.id,
  )
  if (!guard) return null
  const before = new Set(keyIdsOf(guard.application))
  if (context.operation === 'application_key.create') {
    const made = (a.keys ?? []).find((k) => !before.has(k.id))
    if (!made) return null
    const key: JsonObject = { application_id: a.id, created_at: made.created_at }
    if (made.created_by !== undefined) key['created_by'] = made.created_by
    key['id'] = made.id
    return { tenantId: a.tenant_id, type: 'application.key.created', data: { application_key: key } }
  }
  const after = new Set(keyIdsOf(a))
  const gone = [...before].find((id) => !after.has(id))
  if (context.operation !== 'application_key.delete' || gone === undefined) return null
  const key: JsonObject = { application_id: a.id, id: gone }
  return { tenantId: a.tenant_id, type: 'application.key.deleted', data: { application_key: key } }
}

/** Operations whose puts create (else a put updates). */
const CREATES = /\.(create|tokenize|react|child\.create)$/

/** Whether `op`, a put in `batch`, makes a new record: its operation creates, or the batch guards it absent. */
function creates(context: WriteEffectContext, batch: Readonly<WriteBatch>, tenantId: string, id: string) {
  if (CREATES.test(context.operation)) return true
  return (batch.checks ?? []).some(
    (c) => c.check === 'token.absent' && c.tenant_id === tenantId && c.id === id,
  )
}

/**
 * The events one op of a write makes (none for most ops). A token delete by the sweep (actor
 * `system`) is `token.expired`; a session put is `session.created` in state `created`, else
 * `session.authorized` when the call authorizes it.
 */
function eventOf(context: WriteEffectContext, batch: Readonly<WriteBatch>, op: Op): DerivedEvent | null {
  switch (op.op) {
    case 'token.put': {
      const t = op.token
      const created = creates(context, batch, t.tenant_id, t.id)
      const type = created ? 'token.created' : 'token.updated'
      return { tenantId: t.tenant_id, type, data: { token: tokenShown(t, !created) } }
    }
    case 'token.delete': {
      const type = context.actorType === 'system' ? 'token.expired' : 'token.deleted'
      return { tenantId: op.tenant_id, type, data: { token: { id: op.id } } }
    }
    case 'application.put': {
      const a = op.application
      if (context.operation.startsWith('application_key.')) return keyEvent(context, batch, a)
      if (a.expires_at !== undefined || !/^application\.(create|update)$/.test(context.operation)) return null
      const type = context.operation === 'application.create' ? 'application.created' : 'application.updated'
      return { tenantId: a.tenant_id, type, data: { application: applicationShown(a) } }
    }
    case 'application.delete':
      return { tenantId: op.tenant_id, type: 'application.deleted', data: { application: { id: op.id } } }
    case 'reactor.put': {
      const r = op.reactor
      const created = context.operation === 'reactor.create'
      const shown: JsonObject = { created_at: r.created_at, created_by: r.created_by, id: r.id }
      if (!created && r.modified_at !== undefined) shown['modified_at'] = r.modified_at
      if (!created && r.modified_by !== undefined) shown['modified_by'] = r.modified_by
      shown['name'] = r.name
      return {
        tenantId: r.tenant_id,
        type: created ? 'reactor.created' : 'reactor.updated',
        data: { reactor: shown },
      }
    }
    case 'reactor.delete':
      return { tenantId: op.tenant_id, type: 'reactor.deleted', data: { reactor: { id: op.id } } }
    case 'session.put': {
      const s = op.session
      if (s.state === 'created')
        return { tenantId: s.tenant_id, type: 'session.created', data: { session: sessionShown(s, false) } }
      if (context.operation !== 'session.authorize') return null
      return { tenantId: s.tenant_id, type: 'session.authorized', data: { session: sessionShown(s, true) } }
    }
    case 'token_intent.put':
      return {
        tenantId: op.intent.tenant_id,
        type: 'token-intent.created',
        data: { token_intent: intentShown(op.intent) },
      }
    case 'token_intent.delete':
      return intentDeleted(context, batch, op)
    case 'proxy.put': {
      // Only the API's changes: a re-encryption's put of the same proxy is no event.
      const created = context.operation === 'proxy.create'
      if (!created && !/^proxy\.(update|patch)$/.test(context.operation)) return null
      const type = created ? 'proxy.created' : 'proxy.updated'
      return { tenantId: op.proxy.tenant_id, type, data: { proxy: proxyShown(op.proxy, !created) } }
    }
    case 'proxy.delete':
      return { tenantId: op.tenant_id, type: 'proxy.deleted', data: { proxy: { id: op.id } } }
    case 'outbox.put':
      return accepted(op.entry)
    default:
      return null
  }
}

/**
 * An asynchronous react's `reactor.invoked`, from the put that accepts it: a react entry pending,
 * never claimed nor attempted (the dispatcher's claims and results go to the store without write
 * effects). So the accepted react and its event land in one store write: no `202` without it.
 */
function accepted(entry: OutboxEntry): DerivedEvent | null {
  if (entry.kind !== 'react' || entry.state !== 'pending' || entry.claim !== undefined) return null
  if (entry.attempts.length > 0 || entry.reactor_id === undefined) return null
  const run: ReactorInvocation = {
    tenantId: entry.tenant_id,
    reactor: { id: entry.reactor_id, name: entry.reactor_name ?? '' },
    request: { id: entry.id, invocation_type: 'async' },
  }
  return reactorEvents(run, true)[0]!
}

/** The events a write makes, in the order of its ops. */
export function eventsOf(context: WriteEffectContext, batch: Readonly<WriteBatch>): DerivedEvent[] {
  const out: DerivedEvent[] = []
  for (const op of batch.ops) {
    const event = eventOf(context, batch, op)
    if (event) out.push(event)
  }
  return out
}

/** A reactor's run as its events name it (`reactor.invoked`, `.completed`, `.failed`). */
export interface ReactorInvocation {
  tenantId: string
  reactor: { id: string; name: string }
  /** `sync`; or `async` with the request id `reactors.result` takes. */
  request: { id?: string; invocation_type: 'sync' | 'async' }
}

/**
 * How a reactor's run ended, as its event tells it: `error` is the answer's detail (and its
 * validation messages, when it had them): what the caller was answered, never the arguments or the
 * formula's result.
 */
export type ReactorEnd = { ok: true; elapsedMs: number } | { ok: false; error: string; elapsedMs: number }

/**
 * The events of a reactor's run: `reactor.invoked` when `invoked`, then, when it `ended`,
 * `reactor.completed` or `reactor.failed` with the time it took (from the service's clock).
 */
export function reactorEvents(run: ReactorInvocation, invoked: boolean, ended?: ReactorEnd): DerivedEvent[] {
  const reactor: JsonObject = { id: run.reactor.id, name: run.reactor.name }
  const request: JsonObject =
    run.request.id === undefined
      ? { invocation_type: run.request.invocation_type }
      : { id: run.request.id, invocation_type: run.request.invocation_type }
  const out: DerivedEvent[] = []
  if (invoked) out.push({ tenantId: run.tenantId, type: 'reactor.invoked', data: { reactor, request } })
  if (!ended) return out
  const data: JsonObject = { elapsed_ms: ended.elapsedMs }
  if (!ended.ok) data['error'] = ended.error
  data['reactor'] = reactor
  data['request'] = request
  out.push({ tenantId: run.tenantId, type: ended.ok ? 'reactor.completed' : 'reactor.failed', data })
  return out
}

/** How a call that invoked something ended: the status it answered and, when it failed, why. */
export interface CallEnd {
  status: number
  /** The failure in the vault's words (the problem's detail), absent on success. */
  error?: string
}

/**
 * The events of what a call invoked (`Invocation`), once it ended at `nowMs`: a synchronous
 * react's `reactor.invoked` and `reactor.completed` or `reactor.failed`; a proxy call's
 * `proxy.invoked`, naming the proxy, the destination's method, origin and path, and the statuses
 * and times, never a body, a header or a query (they may carry detokenized data).
 */
export function invocationEvents(
  tenantId: string,
  invoked: Invocation,
  end: CallEnd,
  nowMs: number,
): DerivedEvent[] {
  const elapsedMs = Math.max(0, nowMs - invoked.startedMs)
  if (invoked.kind === 'reactor') {
    const run: ReactorInvocation = {
      tenantId,
      reactor: invoked.reactor,
      request: { invocation_type: 'sync' },
    }
    const failure = invoked.failure ?? end.error
    return reactorEvents(
      run,
      true,
      end.error === undefined
        ? { ok: true, elapsedMs }
        : { ok: false, error: failure ?? 'failed', elapsedMs },
    )
  }
  const destination: JsonObject = { request: { method: invoked.method, url: invoked.url } }
  if (invoked.destination)
    destination['response'] = {
      elapsed_ms: invoked.destination.elapsedMs,
      status: invoked.destination.status,
    }
  const response: JsonObject = { elapsed_ms: elapsedMs }
  if (end.error !== undefined) response['error'] = { detail: end.error, status: end.status }
  response['status'] = end.status
  const proxy: JsonObject = invoked.proxy
    ? { id: invoked.proxy.id, name: invoked.proxy.name, response, type: 'pre_configured' }
    : { response, type: 'ephemeral' }
  return [{ tenantId, type: 'proxy.invoked', data: { destination, proxy } }]
}
