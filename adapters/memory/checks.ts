import { assertNever } from '../../src/kernel/index.js'
import type { Check } from '../../src/store/index.js'
import { sameJson } from '../../src/store/index.js'
import { MemoryMaps } from './maps.js'

/** A memory state's checks: each guard of a write, evaluated on the maps. */
export class MemoryChecks extends MemoryMaps {
  /** The first check that fails, or null when all hold. */
  failedCheck(checks: readonly Check[]): Check | null {
    for (const c of checks) if (!this.holds(c)) return c
    return null
  }

  protected holds(c: Check): boolean {
    switch (c.check) {
      case 'token.absent':
        return !this.tokens.has(c.tenant_id, c.id)
      case 'token.present':
        return this.tokens.has(c.tenant_id, c.id)
      case 'token.unlocked': {
        const lock = this.locks.get(c.tenant_id, c.id)
        return lock === undefined || lock.transaction_id === c.except || lock.expires_at <= c.now
      }
      case 'lock.held':
        return this.locks.get(c.tenant_id, c.token_id)?.transaction_id === c.transaction_id
      case 'links.within': {
        const known = new Set(c.links.map((l) => `${l.parent_id}\u0000${l.child_id}`))
        for (const childId of this.children.get(c.tenant_id, c.token_id)?.keys() ?? [])
          if (!known.has(`${c.token_id}\u0000${childId}`)) return false
        for (const parentId of this.parents.get(c.tenant_id, c.token_id) ?? [])
          if (!known.has(`${parentId}\u0000${c.token_id}`)) return false
        return true
      }
      case 'token.unchanged': {
        const stored = this.tokens.get(c.tenant_id, c.id)
        return stored !== undefined && sameJson(stored, c.token)
      }
      case 'transaction.unchanged': {
        const stored = this.transactions.get(c.tenant_id, c.id)
        return stored !== undefined && sameJson(stored, c.transaction)
      }
      case 'association.absent':
      case 'association.present': {
        const exists = this.children.get(c.tenant_id, c.parent_id)?.has(c.child_id) ?? false
        return c.check === 'association.present' ? exists : !exists
      }
      case 'session.unchanged': {
        const stored = this.sessions.get(c.tenant_id, c.id)
        return stored !== undefined && sameJson(stored, c.session)
      }
      case 'formula.present':
        return this.formulas.has(c.tenant_id, c.id) || this.formulas.has(null, c.id)
      case 'formula.unused':
        return !this.formulaUses.has(c.id)
      case 'reactor.unchanged': {
        const stored = this.reactors.get(c.tenant_id, c.id)
        return stored !== undefined && sameJson(stored, c.reactor)
      }
      case 'application.present':
        return this.applications.has(c.tenant_id, c.id)
      case 'reactor.present':
        return this.reactors.has(c.tenant_id, c.id)
      case 'application.unchanged': {
        const stored = this.applications.get(c.tenant_id, c.id)
        return stored !== undefined && sameJson(stored, c.application)
      }
      case 'idempotency.absent':
        return !this.idempotency.has(c.tenant_id, c.id)
      case 'idempotency.claimed':
        return this.idempotency.get(c.tenant_id, c.id)?.claim === c.claim
      case 'token.fingerprint_absent':
        return this.withFingerprint(c.tenant_id, c.fingerprint, c.now).length === 0
      case 'tenant.unchanged': {
        const stored = this.tenants.get(c.tenant_id)
        return stored !== undefined && sameJson(stored, c.tenant)
      }
      case 'token_intent.present':
        return this.intents.intents.has(c.tenant_id, c.id)
      case 'webhook.present':
        return this.hooks.webhooks.has(c.tenant_id, c.id)
      case 'outbox.unchanged': {
        const stored = this.hooks.entries.get(c.tenant_id, c.id)
        return stored !== undefined && sameJson(stored, c.entry)
      }
      case 'count.within':
        return (
          (c.kind === 'webhook'
            ? this.hooks.webhooks.of(c.tenant_id).size
            : this.hooks.pendingOf(c.tenant_id)) <= c.max
        )
      default:
        return assertNever(c)
    }
  }
}
