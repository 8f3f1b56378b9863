import { assertNever } from '../../src/kernel/index.js'
import type { Check } from '../../src/store/index.js'
import { sameJson } from '../../src/store/index.js'
import type { MemoryMaps } from './maps.js'
import { entryOf } from './outbox.js'
import { countRecords } from './reads.js'

// A state's checks: each guard of a write, evaluated on the maps.

/** The first check that fails, or null when all hold. */
export function failedCheck(m: MemoryMaps, checks: readonly Check[]): Check | null {
  for (const c of checks) if (!holds(m, c)) return c
  return null
}

function holds(m: MemoryMaps, c: Check): boolean {
  switch (c.check) {
    case 'token.absent':
      return !m.tokens.has(c.tenant_id, c.id)
    case 'token.present':
      return m.tokens.has(c.tenant_id, c.id)
    case 'token.unlocked': {
      const lock = m.locks.get(c.tenant_id, c.id)
      return lock === undefined || lock.transaction_id === c.except || lock.expires_at <= c.now
    }
    case 'lock.held':
      return m.locks.get(c.tenant_id, c.token_id)?.transaction_id === c.transaction_id
    case 'links.within': {
      const known = new Set(c.links.map((l) => `${l.parent_id}\u0000${l.child_id}`))
      for (const childId of m.children.get(c.tenant_id, c.token_id)?.keys() ?? [])
        if (!known.has(`${c.token_id}\u0000${childId}`)) return false
      for (const parentId of m.parents.get(c.tenant_id, c.token_id) ?? [])
        if (!known.has(`${parentId}\u0000${c.token_id}`)) return false
      return true
    }
    case 'token.unchanged': {
      const stored = m.tokens.get(c.tenant_id, c.id)
      return stored !== undefined && sameJson(stored, c.token)
    }
    case 'transaction.unchanged': {
      const stored = m.transactions.get(c.tenant_id, c.id)
      return stored !== undefined && sameJson(stored, c.transaction)
    }
    case 'association.absent':
    case 'association.present': {
      const exists = m.children.get(c.tenant_id, c.parent_id)?.has(c.child_id) ?? false
      return c.check === 'association.present' ? exists : !exists
    }
    case 'session.unchanged': {
      const stored = m.sessions.get(c.tenant_id, c.id)
      return stored !== undefined && sameJson(stored, c.session)
    }
    case 'formula.present':
      return m.formulas.has(c.tenant_id, c.id) || m.formulas.has(null, c.id)
    case 'formula.unused':
      return !m.formulaUses.has(c.id)
    case 'reactor.unchanged': {
      const stored = m.reactors.get(c.tenant_id, c.id)
      return stored !== undefined && sameJson(stored, c.reactor)
    }
    case 'application.present':
      return m.applications.has(c.tenant_id, c.id)
    case 'reactor.present':
      return m.reactors.has(c.tenant_id, c.id)
    case 'application.unchanged': {
      const stored = m.applications.get(c.tenant_id, c.id)
      return stored !== undefined && sameJson(stored, c.application)
    }
    case 'idempotency.absent':
      return !m.idempotency.has(c.tenant_id, c.id)
    case 'idempotency.claimed':
      return m.idempotency.get(c.tenant_id, c.id)?.claim === c.claim
    case 'token.fingerprint_absent':
      return withFingerprint(m, c.tenant_id, c.fingerprint, c.now).length === 0
    case 'tenant.unchanged': {
      const stored = m.tenants.get(c.tenant_id)
      return stored !== undefined && sameJson(stored, c.tenant)
    }
    case 'token_intent.present':
      return m.intents.intents.has(c.tenant_id, c.id)
    case 'webhook.present':
      return m.hooks.webhooks.has(c.tenant_id, c.id)
    case 'outbox.unchanged': {
      const stored = entryOf(m.hooks, c.tenant_id, c.id)
      return stored !== undefined && sameJson(stored, c.entry)
    }
    case 'proxy.unchanged': {
      const stored = m.proxies.proxies.get(c.tenant_id, c.id)
      return stored !== undefined && sameJson(stored, c.proxy)
    }
    case 'count.within':
      return countRecords(m, c.tenant_id, c.kind) <= c.max
    default:
      return assertNever(c)
  }
}

/** Ids of the tenant's unexpired tokens with this fingerprint. */
function withFingerprint(m: MemoryMaps, tenantId: string, fingerprint: string, now: string): string[] {
  const ids = [
    ...m.tokenIndex.withTerm(tenantId, { kind: 'fingerprint', value: fingerprint }).from(undefined),
  ]
  return ids.filter((id) => {
    const t = m.tokens.get(tenantId, id)
    return t !== undefined && (t.expires_at === undefined || t.expires_at > now)
  })
}
