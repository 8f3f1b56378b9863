import { assertNever, conflict, invalid, notFound, type ServiceError, tooMany } from '../kernel/index.js'
import type { BoundedKind, Check, WriteResult } from '../store/index.js'

/** The error a refused write answers with, by the check that failed. */
export function checkFailure(check: Check): ServiceError {
  switch (check.check) {
    case 'token.absent':
      return conflict(`a token with id ${check.id} already exists`)
    case 'token.present':
      return notFound('token')
    case 'token.unlocked':
      return conflict(`token ${check.id} is locked by an open transaction`)
    case 'lock.held':
      return conflict('the transaction was changed concurrently; retry')
    case 'links.within':
      return conflict(`token ${check.token_id} was linked concurrently; retry`)
    case 'reactor.unchanged':
      return conflict('the reactor was changed concurrently; retry')
    case 'token.unchanged':
      return conflict(`token ${check.id} was changed concurrently; retry`)
    case 'transaction.unchanged':
      return conflict('the transaction was changed concurrently; retry')
    case 'association.absent':
      return conflict('the association already exists')
    case 'association.present':
      return notFound('association')
    case 'session.unchanged':
      return conflict('the nonce has already been used')
    case 'formula.present':
      return notFound('reactor formula')
    case 'formula.unused':
      return conflict('the reactor formula is used by a reactor')
    case 'application.present':
      return notFound('application')
    case 'reactor.present':
      return notFound('reactor')
    case 'application.unchanged':
      return conflict('the application was changed meanwhile; try again')
    case 'idempotency.absent':
    case 'idempotency.claimed':
      return conflict('a request with this idempotency key is in progress')
    case 'token.fingerprint_absent':
      return conflict('a token with the same fingerprint was created concurrently; retry')
    case 'tenant.unchanged':
      return conflict("the tenant's data keys were changed concurrently; retry")
    case 'webhook.present':
      return notFound('webhook')
    case 'token_intent.present':
      return invalid('token_intent_id', 'names a token intent converted or deleted meanwhile')
    case 'outbox.unchanged':
      return conflict('the delivery was changed concurrently; retry')
    case 'proxy.unchanged':
      return conflict('the proxy was changed concurrently; retry')
    case 'count.within':
      return boundFailure(check.kind, check.max)
    default:
      return assertNever(check)
  }
}

/** The refusal of a write that would take its tenant past a per-tenant bound (`max`: what was left less what it adds). */
function boundFailure(kind: BoundedKind, max: number): ServiceError {
  switch (kind) {
    case 'webhook':
      return tooMany(`a tenant may have at most ${max + 1} webhooks`, 60)
    case 'outbox.pending':
      return tooMany('this tenant has as many webhook deliveries and callbacks pending as it may', 10)
    case 'transaction.staged':
      return tooMany(
        "this tenant's open transactions hold as much staged token JSON as they may: commit or roll one back, or stage less",
        10,
      )
    default:
      return assertNever(kind)
  }
}

/** Throws the matching error when a write was refused. */
export function expectWritten(result: WriteResult): void {
  if (!result.ok) throw checkFailure(result.failed)
}
