import type {
  Association,
  FormulaUse,
  IdempotencyRecord,
  Reactor,
  StoredApplication,
  StoredFormula,
  StoredSession,
  StoredToken,
  StoredTransaction,
  Tenant,
  TokenLock,
} from '../kernel/index.js'
import type { StoreDump } from './contract.js'
import { copy } from './json.js'
import { k } from './memory/maps.js'
import { MemoryReads } from './memory/reads.js'
import { byKey } from './order.js'

/**
 * Every record a `MemoryState` holds, as `records()` hands them out and `fromRecords` takes them:
 * what a serialiser needs to rebuild a state that answers every read and check as the original.
 * Beside the `StoreDump` kinds, `locks` holds the lock records, which the transactions alone do not
 * tell (a lock may have passed to another transaction, or been released by one while another that
 * lists it is still open).
 */
export interface StateRecords {
  tenants: readonly Tenant[]
  applications: readonly StoredApplication[]
  tokens: readonly StoredToken[]
  /** Each parent's links in the order they were made (the order `listChildren` answers in). */
  associations: readonly Association[]
  transactions: readonly StoredTransaction[]
  /**
   * `[tenant id, token id, id of the transaction holding its lock, expires_at]`, one per lock
   * record; `expires_at` is left out when it is that of the holding transaction (as the core writes
   * it).
   */
  locks: readonly LockTuple[]
  sessions: readonly StoredSession[]
  formulas: readonly StoredFormula[]
  reactors: readonly Reactor[]
  /** Idempotency records. */
  idempotency: readonly IdempotencyRecord[]
  /** Formula-use records: which reactors use which formula. */
  formulaUses: readonly FormulaUse[]
}

/** A lock record as `StateRecords` lists it. */
export type LockTuple = readonly [
  tenantId: string,
  tokenId: string,
  transactionId: string,
  expiresAt?: string,
]

/**
 * The whole store as in-memory maps, applying `Store.write` batches synchronously: a batch's checks
 * and ops run without yielding, so in one process every batch is atomic and they are serialized.
 * The memory store is this state behind async methods; `tokenvault/testing` exports it as the reference model.
 * Its parts, one file each: the maps (`memory/maps.ts`), the checks (`memory/checks.ts`), the
 * ops (`memory/ops.ts`) and the reads (`memory/reads.ts`); here, its records for a serialiser.
 */
export class MemoryState extends MemoryReads {
  /**
   * Every record as stored, neither copied nor sorted: for a serialiser that reads them at once
   * (say, one `JSON.stringify`), before anything else runs. The arrays are fresh, but the records
   * in them are the state's own, and later ops may change them (staging appends to an open
   * transaction's `writes` and `locks` in place): never mutate them, and never keep them.
   *
   * Associations come parent by parent, each parent's in the order its links were made (a link
   * made again after an unlink comes last); that per-parent order is what `listChildren` answers
   * in, and the only order among links that any read shows.
   */
  records(): StateRecords {
    const associations: Association[] = []
    for (const kids of this.children.values()) for (const a of kids.values()) associations.push(a)
    const locks: LockTuple[] = []
    for (const lock of this.locks.values()) locks.push(this.lockTuple(lock))
    return {
      tenants: [...this.tenants.values()],
      applications: [...this.applications.values()],
      tokens: [...this.tokens.values()],
      associations,
      transactions: [...this.transactions.values()],
      locks,
      sessions: [...this.sessions.values()],
      formulas: [...this.formulas.values()],
      reactors: [...this.reactors.values()],
      idempotency: [...this.idempotency.values()],
      formulaUses: [...this.formulaUses.values()].flatMap((uses) => [...uses.values()]),
    }
  }

  /** A lock record as `StateRecords` lists it: `expires_at` left out when it is the holder's. */
  private lockTuple(lock: TokenLock): LockTuple {
    const holder = this.transactions.get(lock.tenant_id, lock.transaction_id)
    return holder?.expires_at === lock.expires_at
      ? [lock.tenant_id, lock.token_id, lock.transaction_id]
      : [lock.tenant_id, lock.token_id, lock.transaction_id, lock.expires_at]
  }

  /**
   * Puts the lock record a `StateRecords` tuple lists (after the transactions: one without
   * `expires_at` takes its holder's; without a holder to take it from, it locks nothing and is
   * dropped).
   */
  private loadLock([tenantId, tokenId, transactionId, expiresAt]: LockTuple) {
    const expires = expiresAt ?? this.transactions.get(tenantId, transactionId)?.expires_at
    if (expires === undefined) return
    this.apply({
      op: 'lock.put',
      lock: { tenant_id: tenantId, token_id: tokenId, transaction_id: transactionId, expires_at: expires },
    })
  }

  /**
   * Rebuilds the state that `records()` described: every read and check answers as it did on the
   * original, and ops go on to apply alike. Tokens are put before the associations between them,
   * and the lock records are put exactly as listed (whatever the open transactions list).
   *
   * The new state takes the records as its own and may mutate them later (see `records()`): pass
   * records nothing else holds, such as freshly parsed ones. Key and nonce hashes are taken to be
   * unique, as the SHA-256 hashes of random secrets that they are.
   */
  static fromRecords(r: StateRecords): MemoryState {
    const state = new MemoryState()
    for (const tenant of r.tenants) state.apply({ op: 'tenant.put', tenant })
    for (const application of r.applications) state.apply({ op: 'application.put', application })
    for (const token of r.tokens) state.apply({ op: 'token.put', token })
    for (const association of r.associations) state.apply({ op: 'association.put', association })
    for (const transaction of r.transactions) state.apply({ op: 'transaction.put', transaction })
    for (const lock of r.locks) state.loadLock(lock)
    for (const session of r.sessions) state.apply({ op: 'session.put', session })
    for (const formula of r.formulas) state.apply({ op: 'formula.put', formula })
    for (const reactor of r.reactors) state.apply({ op: 'reactor.put', reactor })
    for (const record of r.idempotency) state.apply({ op: 'idempotency.put', record })
    for (const use of r.formulaUses) state.apply({ op: 'formula_use.put', use })
    return state
  }

  /** Every record, deep-copied and sorted by key, for tests and tools (`records()` is the cheap way to serialise). */
  dump(): StoreDump {
    const sorted = <T>(values: Iterable<T>, key: (t: T) => string) => [...values].sort(byKey(key)).map(copy)
    const associations: Association[] = []
    for (const kids of this.children.values()) associations.push(...kids.values())
    return {
      tenants: sorted(this.tenants.values(), (t) => t.id),
      applications: sorted(this.applications.values(), (a) => k(a.tenant_id, a.id)),
      tokens: sorted(this.tokens.values(), (t) => k(t.tenant_id, t.id)),
      associations: sorted(associations, (a) => `${k(a.tenant_id, a.parent_id)}\u0000${a.child_id}`),
      transactions: sorted(this.transactions.values(), (t) => k(t.tenant_id, t.id)),
      sessions: sorted(this.sessions.values(), (s) => k(s.tenant_id, s.id)),
      formulas: sorted(this.formulas.values(), (f) => k(f.tenant_id, f.id)),
      reactors: sorted(this.reactors.values(), (r) => k(r.tenant_id, r.id)),
      idempotency: sorted(this.idempotency.values(), (r) => k(r.tenant_id, r.id)),
    }
  }
}
