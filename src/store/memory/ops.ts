import type { Association, Check, Op } from '../../kernel/index.js'
import { assertNever } from '../../kernel/index.js'
import type { WriteResult } from '../contract.js'
import { copy } from '../json.js'
import { applicationKeyHashes } from '../keys.js'
import { SortedIds } from '../sorted-ids.js'
import { MemoryChecks } from './checks.js'
import { needsCheck, placeKey } from './maps.js'

/** A memory state's writes: a batch applied atomically when its checks hold, one op at a time. */
export class MemoryOps extends MemoryChecks {
  /** Applies a batch atomically if its checks hold. Synchronous: nothing interleaves. */
  write(batch: { checks?: readonly Check[]; ops: readonly Op[] }): WriteResult {
    const failed = this.failedCheck(batch.checks ?? [])
    if (failed) return { ok: false, failed }
    for (const op of batch.ops) this.apply(copy(op))
    return { ok: true }
  }

  /** Applies one op. Ops are total: applying one never fails. */
  apply(op: Op): void {
    switch (op.op) {
      case 'tenant.put':
        this.tenants.set(op.tenant.id, op.tenant)
        return
      case 'tenant.delete':
        this.tenants.delete(op.id)
        return
      case 'application.put': {
        const a = op.application
        const old = this.applications.get(a.tenant_id, a.id)
        if (old) for (const hash of applicationKeyHashes(old)) this.keys.delete(hash)
        this.applications.set(a.tenant_id, a.id, a)
        for (const hash of applicationKeyHashes(a)) {
          this.keys.set(hash, { kind: 'application', tenantId: a.tenant_id, id: a.id })
        }
        return
      }
      case 'application.delete': {
        const old = this.applications.get(op.tenant_id, op.id)
        if (old) for (const hash of applicationKeyHashes(old)) this.keys.delete(hash)
        this.applications.delete(op.tenant_id, op.id)
        return
      }
      case 'token.put': {
        const t = op.token
        const old = this.tokens.get(t.tenant_id, t.id)
        this.tokenIndex.update(t.tenant_id, t.id, old, t)
        this.tokens.set(t.tenant_id, t.id, t)
        if (t.expires_at !== undefined) this.expiringTokens.set(t.tenant_id, t.id, t)
        else if (old?.expires_at !== undefined) this.expiringTokens.delete(t.tenant_id, t.id)
        if (t.cvc_expires_at !== undefined) this.cvcTokens.set(t.tenant_id, t.id, t)
        else if (old?.cvc_expires_at !== undefined) this.cvcTokens.delete(t.tenant_id, t.id)
        this.recount(t.tenant_id, t.id, old, t)
        return
      }
      case 'token.delete':
        this.recount(op.tenant_id, op.id, this.tokens.get(op.tenant_id, op.id), undefined)
        this.tokenIndex.update(op.tenant_id, op.id, this.tokens.get(op.tenant_id, op.id), undefined)
        this.tokens.delete(op.tenant_id, op.id)
        this.expiringTokens.delete(op.tenant_id, op.id)
        this.cvcTokens.delete(op.tenant_id, op.id)
        return
      case 'association.put': {
        const a = op.association
        const tenant = a.tenant_id
        let kids = this.children.get(tenant, a.parent_id)
        if (!kids) {
          kids = new Map<string, Association>()
          this.children.set(tenant, a.parent_id, kids)
        }
        if (kids.has(a.child_id)) return
        kids.set(a.child_id, a)
        const seq = this.nextLink++
        this.linkOrder.set(a, seq)
        let order = this.childOrder.get(tenant, a.parent_id)
        if (!order) {
          order = { keys: new SortedIds(), ids: new Map() }
          this.childOrder.set(tenant, a.parent_id, order)
        }
        order.keys.add(placeKey(seq))
        order.ids.set(placeKey(seq), a.child_id)
        if (needsCheck(this.tokens.get(tenant, a.child_id))) this.countExpiring(tenant, a.parent_id, 1)
        let ps = this.parents.get(tenant, a.child_id)
        if (!ps) {
          ps = new Set<string>()
          this.parents.set(tenant, a.child_id, ps)
        }
        ps.add(a.parent_id)
        return
      }
      case 'association.delete':
        this.unlink(op.tenant_id, op.parent_id, op.child_id)
        return
      case 'transaction.put': {
        const tx = op.transaction
        this.transactions.set(tx.tenant_id, tx.id, tx)
        return
      }
      case 'transaction.delete': {
        this.transactions.delete(op.tenant_id, op.id)
        return
      }
      case 'lock.put':
        this.locks.set(op.lock.tenant_id, op.lock.token_id, op.lock)
        return
      case 'lock.delete':
        this.locks.delete(op.tenant_id, op.token_id)
        return
      case 'session.put': {
        const s = op.session
        this.dropSessionIndexes(s.tenant_id, s.id)
        this.sessions.set(s.tenant_id, s.id, s)
        this.keys.set(s.key_hash, { kind: 'session', tenantId: s.tenant_id, id: s.id })
        this.nonces.set(s.tenant_id, s.nonce_hash, s.id)
        return
      }
      case 'session.delete': {
        this.dropSessionIndexes(op.tenant_id, op.id)
        this.sessions.delete(op.tenant_id, op.id)
        return
      }
      case 'formula.put':
        this.formulas.set(op.formula.tenant_id, op.formula.id, op.formula)
        return
      case 'formula.delete':
        this.formulas.delete(op.tenant_id, op.id)
        return
      case 'reactor.put': {
        const r = op.reactor
        this.reactors.set(r.tenant_id, r.id, r)
        return
      }
      case 'reactor.delete': {
        this.reactors.delete(op.tenant_id, op.id)
        return
      }
      case 'formula_use.put': {
        const u = op.use
        let uses = this.formulaUses.get(u.formula_id)
        if (!uses) {
          uses = new Map()
          this.formulaUses.set(u.formula_id, uses)
        }
        const key = `${u.tenant_id}\u0000${u.reactor_id}`
        if (!uses.has(key)) uses.set(key, u)
        return
      }
      case 'formula_use.delete': {
        const uses = this.formulaUses.get(op.formula_id)
        uses?.delete(`${op.tenant_id}\u0000${op.reactor_id}`)
        if (uses?.size === 0) this.formulaUses.delete(op.formula_id)
        return
      }
      case 'idempotency.put':
        this.idempotency.set(op.record.tenant_id, op.record.id, op.record)
        return
      case 'idempotency.delete':
        this.idempotency.delete(op.tenant_id, op.id)
        return
      default:
        assertNever(op)
    }
  }
}
