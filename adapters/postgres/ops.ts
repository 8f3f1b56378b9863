import type { QueryConfig, QueryResult } from 'pg'
import { assertNever } from '../../src/errors.js'
import { applicationKeyHashes } from '../../src/store/keys.js'
import type { Op } from '../../src/types.js'
import { sortKey, statementName } from './keys.js'
import type { Statements } from './statements.js'

/** What applying ops needs: a client inside the write's SQL transaction. */
export interface OpContext {
  query(config: QueryConfig): Promise<QueryResult>
  statements: Statements
}

const json = (value: unknown) => JSON.stringify(value)
const run = (ctx: OpContext, text: string, values: unknown[]) =>
  ctx.query({ name: statementName(text), text, values })

/**
 * Applies one op inside the write's SQL transaction, exactly as `MemoryState.apply` does. Ops are
 * total: one never fails on missing records (it does nothing instead).
 */
export async function applyOp(ctx: OpContext, op: Op): Promise<void> {
  const st = ctx.statements
  switch (op.op) {
    case 'tenant.put':
      await run(ctx, st.tenantPut, [op.tenant.id, json(op.tenant)])
      return
    case 'tenant.delete':
      await run(ctx, st.tenantDelete, [op.id])
      return
    case 'application.put': {
      const a = op.application
      const hashes = applicationKeyHashes(a)
      await run(ctx, st.applicationPut, [a.tenant_id, a.id, sortKey(a.created_at, a.id), json(a), hashes])
      return
    }
    case 'application.delete':
      await run(ctx, st.applicationDelete, [op.tenant_id, op.id])
      return
    case 'token.put': {
      const t = op.token
      await run(ctx, st.tokenPut, [t.tenant_id, t.id, t.type, t.expires_at ?? null, json(t)])
      return
    }
    case 'token.delete':
      await run(ctx, st.tokenDelete, [op.tenant_id, op.id])
      return
    case 'association.put': {
      const a = op.association
      await run(ctx, st.associationPut, [a.tenant_id, a.parent_id, a.child_id, json(a)])
      return
    }
    case 'association.delete':
      await run(ctx, st.associationDelete, [op.tenant_id, op.parent_id, op.child_id])
      return
    case 'transaction.put': {
      const t = op.transaction
      await run(ctx, st.transactionPut, [t.tenant_id, t.id, t.state, t.expires_at, json(t)])
      return
    }
    case 'transaction.delete':
      await run(ctx, st.transactionDelete, [op.tenant_id, op.id])
      return
    case 'lock.put': {
      const l = op.lock
      await run(ctx, st.lockPut, [l.tenant_id, l.token_id, l.transaction_id, l.expires_at])
      return
    }
    case 'lock.delete':
      await run(ctx, st.lockDelete, [op.tenant_id, op.token_id])
      return
    case 'session.put': {
      const s = op.session
      await run(ctx, st.sessionPut, [s.tenant_id, s.id, s.expires_at, json(s), s.key_hash, s.nonce_hash])
      return
    }
    case 'session.delete':
      await run(ctx, st.sessionDelete, [op.tenant_id, op.id])
      return
    case 'formula.put': {
      const f = op.formula
      const values = [
        f.tenant_id ?? '',
        f.id,
        f.tenant_id,
        f.name.toLowerCase(),
        sortKey(f.name, f.id),
        json(f),
      ]
      await run(ctx, st.formulaPut, values)
      return
    }
    case 'formula.delete':
      await run(ctx, st.formulaDelete, [op.tenant_id ?? '', op.id])
      return
    case 'reactor.put': {
      const r = op.reactor
      const values = [
        r.tenant_id,
        r.id,
        r.formula_id ?? null,
        sortKey(r.created_at, r.id),
        json(r),
        r.name.toLowerCase(),
      ]
      await run(ctx, st.reactorPut, values)
      return
    }
    case 'reactor.delete':
      await run(ctx, st.reactorDelete, [op.tenant_id, op.id])
      return
    case 'formula_use.put':
      await run(ctx, st.formulaUsePut, [op.use.formula_id, op.use.tenant_id, op.use.reactor_id])
      return
    case 'formula_use.delete':
      await run(ctx, st.formulaUseDelete, [op.formula_id, op.tenant_id, op.reactor_id])
      return
    case 'idempotency.put': {
      const r = op.record
      await run(ctx, st.idempotencyPut, [r.tenant_id, r.id, r.claim, r.expires_at, json(r)])
      return
    }
    case 'idempotency.delete':
      await run(ctx, st.idempotencyDelete, [op.tenant_id, op.id])
      return
    default:
      assertNever(op)
  }
}
