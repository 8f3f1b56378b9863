import type { Check, Op } from '../../src/types.js'
import { lockKey } from './keys.js'
import { opTenant } from './ops.js'

/** Which advisory locks a write takes before it reads or writes anything. */
export interface LockPlan {
  /** Take the store-wide lock exclusively (not shared): the write reads across tenants. */
  exclusive: boolean
  /** Tenants (`''` stands for official formulas) whose lock the write takes. */
  tenants: Set<string>
}

/**
 * The locks a batch needs: the lock of every tenant its checks read and its ops write (a
 * `formula.present` check also reads official formulas), and the store-wide lock, exclusively when
 * a check reads across tenants (`formula.unused`).
 */
export function lockPlan(checks: readonly Check[], ops: readonly Op[]): LockPlan {
  const tenants = new Set<string>()
  let exclusive = false
  for (const c of checks) {
    if (c.check === 'formula.unused') {
      exclusive = true
      continue
    }
    tenants.add(c.tenant_id)
    if (c.check === 'formula.present') tenants.add('')
  }
  for (const op of ops) tenants.add(opTenant(op))
  return { exclusive, tenants }
}

/**
 * Advisory-lock keys of one store. Keys are 64-bit hashes of the schema name and the tenant id, so
 * stores in different schemas of one database do not contend; a hash collision only makes two
 * tenants share a lock (more waiting, never less safety).
 */
export class LockKeys {
  readonly global: string
  private readonly cache = new Map<string, string>()

  constructor(private readonly schema: string) {
    this.global = lockKey(`tokenvault\u0000store\u0000${schema}`)
  }

  /** The key of a tenant's lock. */
  tenant(tenantId: string): string {
    let key = this.cache.get(tenantId)
    if (key === undefined) {
      if (this.cache.size >= 10_000) this.cache.clear()
      key = lockKey(`tokenvault\u0000tenant\u0000${this.schema}\u0000${tenantId}`)
      this.cache.set(tenantId, key)
    }
    return key
  }

  /** Tenant keys sorted as numbers: every write takes them in this one order, so they never deadlock. */
  sorted(tenantIds: Iterable<string>): string[] {
    const keys = [...new Set([...tenantIds].map((id) => this.tenant(id)))]
    return keys.sort((a, b) => {
      const x = BigInt(a)
      const y = BigInt(b)
      return x < y ? -1 : x > y ? 1 : 0
    })
  }

  /**
   * One simple-protocol string that opens the SQL transaction and takes the plan's locks: the
   * store-wide lock first (shared or exclusive), then the tenant locks in key order.
   */
  begin(plan: LockPlan): string {
    const global = plan.exclusive ? 'pg_advisory_xact_lock' : 'pg_advisory_xact_lock_shared'
    const tenants = this.sorted(plan.tenants).map((key) => `; SELECT pg_advisory_xact_lock(${key})`)
    return `BEGIN; SELECT ${global}(${this.global})${tenants.join('')}`
  }
}
