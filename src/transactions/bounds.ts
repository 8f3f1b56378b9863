import type { StoredTransaction } from '../kernel/index.js'
import { invalid } from '../kernel/index.js'
import type { Op } from '../store/index.js'

/**
 * What one transaction may stage. Every write enlisted counts (a token written again in the same
 * transaction counts again), so the totals are an upper bound on what a commit applies. They are
 * kept on the transaction record itself (`staged_writes`, `staged_chars`), which every staging
 * write puts again guarded on it being unchanged: the bound is checked before anything is staged,
 * in the same atomic write, and concurrent enlists never pass it (the one that lost the race reads
 * the new totals and is refused or fits).
 *
 * Why these numbers: a commit is one atomic store write of everything staged. On PostgreSQL it
 * takes one advisory lock per staged token and one per fingerprint (2 001 at the bound, plus one
 * per link of a staged delete), and the server's lock table, shared by every session, holds 64 per
 * connection slot plus what spare shared memory allows (about 12 700 with PostgreSQL 15's
 * defaults): five tenants committing at the bound at once fit beside the usual traffic. 16 MiB of
 * staged token JSON keeps the heap a commit needs (the tokens read, sealed again and sent as one
 * JSON argument) to a few times that.
 */
export const MAX_STAGED_WRITES = 1000

/** Characters of token JSON (as staged, before sealing) one transaction may stage: 16 MiB. */
export const MAX_STAGED_CHARS = 16 * 1024 * 1024

/**
 * The default `maxStagedCharsPerTenant` of `createService`: what all of one tenant's open
 * transactions may hold staged together, 64 MiB of token JSON (four transactions at their own
 * bound). Without it a tenant's transactions, each within its 16 MiB, held as much as it opened:
 * 250 of them took a memory server from 173 MB to 779 MB, and every tenant shares that heap.
 */
export const DEFAULT_STAGED_CHARS_PER_TENANT = 64 * 1024 * 1024

/** The characters a staged op adds: its token's JSON, or nothing for a delete. */
export function stagedChars(op: Op): number {
  return op.op === 'token.put' ? JSON.stringify(op.token).length : 0
}

/** The refusal of a write that would take a transaction past one of its bounds. */
function overBound(what: string): never {
  throw invalid('transaction', `${what}: commit or roll back this transaction and enlist the rest in another`)
}

/**
 * `tx` as it is once `ops` are staged: its totals moved by them. Throws `validation_failed`
 * (400, naming the bound) when that passes `MAX_STAGED_WRITES` or `MAX_STAGED_CHARS`.
 */
export function withStaged(tx: StoredTransaction, ops: readonly Op[]): StoredTransaction {
  const writes = (tx.staged_writes ?? 0) + ops.length
  let chars = tx.staged_chars ?? 0
  for (const op of ops) chars += stagedChars(op)
  if (writes > MAX_STAGED_WRITES)
    overBound(
      `a transaction stages at most ${MAX_STAGED_WRITES} writes (this one holds ${tx.staged_writes ?? 0})`,
    )
  if (chars > MAX_STAGED_CHARS)
    overBound(`a transaction stages at most ${MAX_STAGED_CHARS} characters (16 MiB) of token JSON`)
  return { ...tx, version: tx.version + 1, staged_writes: writes, staged_chars: chars }
}

/** Throws as `withStaged` when what a commit read (`writes` records, `chars` characters) is past a bound. */
export function checkStagedRead(writes: number, chars: number): void {
  if (writes > MAX_STAGED_WRITES)
    overBound(`a transaction commits at most ${MAX_STAGED_WRITES} staged writes`)
  if (chars > MAX_STAGED_CHARS)
    overBound(`a transaction commits at most ${MAX_STAGED_CHARS} characters (16 MiB) of staged token JSON`)
}
