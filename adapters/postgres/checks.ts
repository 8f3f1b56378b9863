import type { QueryConfig } from 'pg'
import { assertNever } from '../../src/kernel/index.js'
import type { Check } from '../../src/store/index.js'
import { prepared } from './keys.js'
import { webhookCheckExpression } from './outbox.js'
import type { Tables } from './statements.js'

/** A boolean SQL expression that holds exactly when `MemoryState` finds the check holds. */
function expression(t: Tables, c: Check, p: (value: unknown) => string): string {
  switch (c.check) {
    case 'token.absent':
    case 'token.present': {
      const exists = `EXISTS (SELECT 1 FROM ${t.tokens} WHERE tenant_id = ${p(c.tenant_id)} AND id = ${p(c.id)})`
      return c.check === 'token.present' ? exists : `NOT ${exists}`
    }
    case 'token.unlocked':
      // A field guard on the one lock row: rows exist only for open transactions, with their expiry.
      return `NOT EXISTS (SELECT 1 FROM ${t.tokenLocks} WHERE tenant_id = ${p(c.tenant_id)} AND token_id = ${p(c.id)}
          AND transaction_id IS DISTINCT FROM ${p(c.except ?? null)} AND expires_at > ${p(c.now)})`
    case 'lock.held':
      return `EXISTS (SELECT 1 FROM ${t.tokenLocks} WHERE tenant_id = ${p(c.tenant_id)}
        AND token_id = ${p(c.token_id)} AND transaction_id = ${p(c.transaction_id)})`
    case 'links.within': {
      // Each link as an object: `@>` on arrays ignores order, so `[p, c]` would match `[c, p]`.
      const known = JSON.stringify(c.links.map((l) => ({ p: l.parent_id, c: l.child_id })))
      return `NOT EXISTS (SELECT 1 FROM ${t.associations} a WHERE a.tenant_id = ${p(c.tenant_id)}
          AND (a.parent_id = ${p(c.token_id)} OR a.child_id = ${p(c.token_id)})
          AND NOT (${p(known)})::jsonb @> jsonb_build_array(jsonb_build_object('p', a.parent_id, 'c', a.child_id)))`
    }
    case 'token.unchanged':
      return `EXISTS (SELECT 1 FROM ${t.tokens} WHERE tenant_id = ${p(c.tenant_id)} AND id = ${p(c.id)}
        AND doc = (${p(JSON.stringify(c.token))})::jsonb)`
    case 'transaction.unchanged':
      return `EXISTS (SELECT 1 FROM ${t.transactions} WHERE tenant_id = ${p(c.tenant_id)} AND id = ${p(c.id)}
        AND doc = (${p(JSON.stringify(c.transaction))})::jsonb)`
    case 'association.absent':
    case 'association.present': {
      const exists = `EXISTS (SELECT 1 FROM ${t.associations} WHERE tenant_id = ${p(c.tenant_id)}
        AND parent_id = ${p(c.parent_id)} AND child_id = ${p(c.child_id)})`
      return c.check === 'association.present' ? exists : `NOT ${exists}`
    }
    case 'session.unchanged':
      return `EXISTS (SELECT 1 FROM ${t.sessions} WHERE tenant_id = ${p(c.tenant_id)} AND id = ${p(c.id)}
        AND doc = (${p(JSON.stringify(c.session))})::jsonb)`
    case 'formula.present':
      return `EXISTS (SELECT 1 FROM ${t.formulas} WHERE tenant_key IN (${p(c.tenant_id)}, '') AND id = ${p(c.id)})`
    case 'formula.unused':
      return `NOT EXISTS (SELECT 1 FROM ${t.formulaUses} WHERE formula_id = ${p(c.id)})`
    case 'reactor.unchanged':
      return `EXISTS (SELECT 1 FROM ${t.reactors} WHERE tenant_id = ${p(c.tenant_id)} AND id = ${p(c.id)}
        AND doc = (${p(JSON.stringify(c.reactor))})::jsonb)`
    case 'application.present':
      return `EXISTS (SELECT 1 FROM ${t.applications} WHERE tenant_id = ${p(c.tenant_id)} AND id = ${p(c.id)})`
    case 'reactor.present':
      return `EXISTS (SELECT 1 FROM ${t.reactors} WHERE tenant_id = ${p(c.tenant_id)} AND id = ${p(c.id)})`
    case 'application.unchanged':
      return `EXISTS (SELECT 1 FROM ${t.applications} WHERE tenant_id = ${p(c.tenant_id)} AND id = ${p(c.id)}
        AND doc = (${p(JSON.stringify(c.application))})::jsonb)`
    case 'idempotency.absent':
      return `NOT EXISTS (SELECT 1 FROM ${t.idempotency} WHERE tenant_id = ${p(c.tenant_id)} AND id = ${p(c.id)})`
    case 'idempotency.claimed':
      return `EXISTS (SELECT 1 FROM ${t.idempotency} WHERE tenant_id = ${p(c.tenant_id)} AND id = ${p(c.id)}
        AND claim = ${p(c.claim)})`
    case 'token.fingerprint_absent':
      return `NOT EXISTS (SELECT 1 FROM ${t.tokens} WHERE tenant_id = ${p(c.tenant_id)}
        AND (doc ->> 'fingerprint') COLLATE "C" = ${p(c.fingerprint)} AND (expires_at IS NULL OR expires_at > ${p(c.now)}))`
    case 'token_intent.present':
      return `EXISTS (SELECT 1 FROM ${t.schema}.token_intents WHERE tenant_id = ${p(c.tenant_id)} AND id = ${p(c.id)})`
    case 'proxy.unchanged':
      return `EXISTS (SELECT 1 FROM ${t.schema}.proxies WHERE tenant_id = ${p(c.tenant_id)} AND id = ${p(c.id)}
        AND doc = (${p(JSON.stringify(c.proxy))})::jsonb)`
    case 'webhook.present':
    case 'outbox.unchanged':
    case 'count.within':
      return webhookCheckExpression(t, c, p)!
    case 'tenant.unchanged':
      return `EXISTS (SELECT 1 FROM ${t.tenants} WHERE id = ${p(c.tenant_id)}
        AND doc = (${p(JSON.stringify(c.tenant))})::jsonb)`
    default:
      return assertNever(c)
  }
}

/**
 * One statement that evaluates every check at once (in one snapshot), as columns `c0`, `c1`, ….
 * Statements for up to three checks are prepared (their texts come from a small, fixed set).
 */
export function checkQuery(t: Tables, checks: readonly Check[]): QueryConfig {
  const values: unknown[] = []
  const p = (value: unknown) => {
    values.push(value)
    return `$${values.length}::text`
  }
  const columns = checks.map((c, i) => `(${expression(t, c, p)}) AS c${i}`)
  const text = `SELECT ${columns.join(', ')}`
  return checks.length <= 3 ? prepared(text, values) : { text, values }
}

/** The first check whose column in a `checkQuery` row is false, or null when all hold. */
export function firstFailed(
  checks: readonly Check[],
  row: Record<string, unknown> | undefined,
): Check | null {
  for (let i = 0; i < checks.length; i++) if (row?.[`c${i}`] !== true) return checks[i]!
  return null
}
