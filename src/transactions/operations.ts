import type { Ctx } from '../call/index.js'
import { checkFailure, retryCas } from '../call/index.js'
import type { EmptyInput, StoredTransaction, Transaction } from '../kernel/index.js'
import { conflict, emptyBody, forbidden, isoAfter, newId, notFound, parse } from '../kernel/index.js'
import type { Check, Op } from '../store/index.js'
import { checkStagedRead } from './bounds.js'
import { withLinkDeletes } from './links.js'
import { readStaged, writeDiscard, writeEnd } from './locks.js'

/** The public shape of a stored transaction. */
function shown(tx: StoredTransaction): Transaction {
  return { id: tx.id, created_at: tx.created_at, created_by: tx.created_by, expires_at: tx.expires_at }
}

/** Refuses a session that was never authorized: it may not open a transaction (403). */
function requireHolder(ctx: Ctx): void {
  const { principal } = ctx
  if (principal.kind === 'session' && principal.permissions.length === 0 && !principal.rules?.length)
    throw forbidden('the session is not authorized')
}

/** The caller's own transaction, still open: 404 unknown, 403 another application's, 409 closed or expired. */
async function ownOpenTransaction(ctx: Ctx, id: string): Promise<StoredTransaction> {
  const tx = await ctx.store.getTransaction(ctx.principal.tenantId, id)
  if (!tx) throw notFound('transaction')
  if (tx.created_by !== ctx.principal.id)
    throw forbidden('only the application that created the transaction may end it')
  if (tx.state !== 'open') throw conflict(`the transaction is ${tx.state.replace('_', ' ')}`)
  if (tx.expires_at <= ctx.now()) {
    // Ended as the sweep would end it; a concurrent change to it leaves that to the sweep.
    await writeDiscard(ctx.store, tx, 'expired', tx.expires_at)
    throw conflict('the transaction has expired')
  }
  return tx
}

/** Transaction create, commit and rollback for one caller. None needs a permission. */
export function transactionOperations(ctx: Ctx) {
  const ownOpen = (id: string) => ownOpenTransaction(ctx, id)
  return {
    /**
     * Opens a transaction that lives `transactionTtlMs` (default 1 hour), and no longer than the key
     * that opened it: only that key may end it, so a session's transaction outliving the session
     * held its tokens' locks for the hour against every other key of the tenant.
     */
    async create(input?: EmptyInput): Promise<Transaction> {
      requireHolder(ctx)
      parse(emptyBody, input)
      const now = new Date(ctx.now())
      const ttl = isoAfter(now, ctx.options.transactionTtlMs)
      const keyEnds = ctx.principal.expiresAt
      const tx: StoredTransaction = {
        id: newId(),
        tenant_id: ctx.principal.tenantId,
        created_at: now.toISOString(),
        created_by: ctx.principal.id,
        expires_at: keyEnds !== undefined && keyEnds < ttl ? keyEnds : ttl,
        state: 'open',
        version: 0,
      }
      await ctx.store.write({ ops: [{ op: 'transaction.put', transaction: tx }] })
      return shown(tx)
    },

    /** Applies every enlisted write in one atomic store write. Of racing commits exactly one succeeds. */
    async commit(id: string): Promise<void> {
      // Read the transaction, then write its staged writes, its end and the release of its locks
      // in one write guarded on it being unchanged: a write staged meanwhile makes the guard fail,
      // and the commit starts over with it, so a staged write either lands with the commit or is
      // refused, never lost.
      await retryCas(async () => {
        const tx = await ownOpen(id)
        const ended: StoredTransaction = { ...tx, state: 'committed', ended_at: ctx.now() }
        // Bounded: a transaction past its bounds (staged before they existed) is refused, not read.
        const read = await readStaged(ctx.store, tx)
        checkStagedRead(read.staged.length, read.chars)
        const staged = read.staged.sort((a, b) =>
          a.seq !== b.seq ? a.seq - b.seq : a.token_id < b.token_id ? -1 : 1,
        )
        // A token the transaction created is put guarded absent (so its event is `token.created`,
        // and it never overwrites one made meanwhile: a 409); deleted again, it is not written.
        const writes = staged.flatMap((s): Op[] => {
          if (s.token) return [{ op: 'token.put', token: s.token }]
          return s.creates ? [] : [{ op: 'token.delete', tenant_id: tx.tenant_id, id: s.token_id }]
        })
        const absent = staged.flatMap((s): Check[] =>
          s.token && s.creates ? [{ check: 'token.absent', tenant_id: tx.tenant_id, id: s.token_id }] : [],
        )
        // A staged token delete takes the token's links as they are now (guarded on them).
        const applied = await withLinkDeletes(ctx.store, tx.tenant_id, writes)
        const ids = staged.map((s) => s.token_id)
        await refuseExpired(ctx, tx, staged)
        const checks = [...absent, ...applied.checks]
        const result = await writeEnd(ctx.store, tx, ended, ids, applied.ops, checks)
        if (result.ok) return { done: undefined }
        if (result.failed.check === 'lock.held') {
          // Only a lock of an expired transaction can be taken over: it expired meanwhile.
          await writeDiscard(ctx.store, tx, 'expired', tx.expires_at)
          throw conflict('the transaction has expired')
        }
        const again =
          result.failed.check === 'transaction.unchanged' || result.failed.check === 'links.within'
        if (!again) throw checkFailure(result.failed)
        return { lost: result.failed }
      })
    },

    /** Discards every enlisted write and releases the transaction's locks. */
    async rollback(id: string): Promise<void> {
      // Guarded, like a commit, on the transaction read being unchanged (so still open); a write
      // staged meanwhile makes the rollback start over and discard that write too.
      await retryCas(async () => {
        const tx = await ownOpen(id)
        const result = await writeDiscard(ctx.store, tx, 'rolled_back', ctx.now())
        return result.ok ? { done: undefined } : { lost: result.failed }
      })
    },
  }
}

/**
 * Refuses a commit whose staged writes change a token that expired while the transaction held it
 * (409; nothing lands): the commit put the token back, data and links, after every read had
 * answered 404. The token goes once the transaction ends, as the sweep leaves a held token until
 * then. A staged delete of it is no change and passes.
 */
async function refuseExpired(
  ctx: Ctx,
  tx: StoredTransaction,
  staged: readonly { token_id: string; token?: unknown }[],
): Promise<void> {
  const changed = staged.filter((s) => s.token).map((s) => s.token_id)
  if (changed.length === 0) return
  const now = ctx.now()
  for (const head of await ctx.store.getTokenHeads(tx.tenant_id, changed)) {
    if (head.expires_at !== undefined && head.expires_at <= now)
      throw conflict(`token ${head.id} expired while the transaction held it: roll the transaction back`)
  }
}
