import type { Ctx } from '../call/index.js'
import { checkFailure, expectWritten, retryCas } from '../call/index.js'
import type { StagedWrite, StoredToken, StoredTransaction } from '../kernel/index.js'
import { conflict, invalid, notFound } from '../kernel/index.js'
import type { Check, Op, TokenHead, WriteResult } from '../store/index.js'
import { withStaged } from './bounds.js'
import { lockOps } from './locks.js'

/**
 * Reads and writes as the caller sees them: committed state, plus — when the caller enlisted in a
 * transaction — that transaction's staged writes (read-committed isolation).
 */

/**
 * The caller's open transaction, or null when it enlisted in none. Unknown, or made by another
 * application (or session) than the caller's → 404, as for another tenant's: a transaction belongs
 * to its creator, and no one else reads through it or writes into it. Closed or expired → 409.
 */
export function openTransaction(ctx: Ctx): Promise<StoredTransaction | null> {
  // Most calls enlist in none: answered without another async step.
  return ctx.transactionId === undefined ? NO_TRANSACTION : readOpenTransaction(ctx, ctx.transactionId)
}

const NO_TRANSACTION: Promise<null> = Promise.resolve(null)

async function readOpenTransaction(ctx: Ctx, transactionId: string): Promise<StoredTransaction> {
  const tx = await ctx.store.getTransaction(ctx.principal.tenantId, transactionId)
  if (!tx || tx.created_by !== ctx.principal.id) throw notFound('transaction')
  if (tx.state !== 'open' || tx.expires_at <= ctx.now()) throw conflict('the transaction is not open')
  return tx
}

/**
 * The staged state of the tokens among `ids` in `tx`: id → the staged record, or null when staged
 * deleted; ids the transaction left untouched are absent. One store read (none without `tx`, or
 * when it staged nothing yet).
 */
export async function stagedOf(
  ctx: Ctx,
  tx: StoredTransaction | null,
  ids: readonly string[],
): Promise<Map<string, StoredToken | null>> {
  const out = new Map<string, StoredToken | null>()
  for (const [id, s] of await stagedRecords(ctx, tx, ids)) out.set(id, s.token)
  return out
}

/** The staged records of the tokens among `ids` in `tx`, as `stagedOf` reads them: id → record. */
async function stagedRecords(
  ctx: Ctx,
  tx: StoredTransaction | null,
  ids: readonly string[],
): Promise<Map<string, StagedWrite>> {
  const out = new Map<string, StagedWrite>()
  if (!tx || tx.version === 0 || !ids.length) return out
  for (const s of await ctx.store.getStaged(ctx.principal.tenantId, tx.id, ids)) out.set(s.token_id, s)
  return out
}

/** The staged state of a token: a record, `null` when staged as deleted, `undefined` when untouched. */
export async function stagedToken(
  ctx: Ctx,
  tx: StoredTransaction | null,
  id: string,
): Promise<StoredToken | null | undefined> {
  const staged = await stagedOf(ctx, tx, [id])
  return staged.has(id) ? staged.get(id) : undefined
}

/** A live (unexpired) token as the caller sees it, or null. */
export async function readToken(
  ctx: Ctx,
  tx: StoredTransaction | null,
  id: string,
): Promise<StoredToken | null> {
  // Outside a transaction (or before it staged anything) the committed record is the caller's view.
  const staged = tx === null || tx.version === 0 ? undefined : await stagedToken(ctx, tx, id)
  const token = staged === undefined ? await ctx.store.getToken(ctx.principal.tenantId, id) : staged
  if (!token || (token.expires_at !== undefined && token.expires_at <= ctx.now())) return null
  return token
}

/** Like `readToken`, but throws `not_found`. */
export async function mustReadToken(
  ctx: Ctx,
  tx: StoredTransaction | null,
  id: string,
): Promise<StoredToken> {
  const token = await readToken(ctx, tx, id)
  if (!token) throw notFound('token')
  return token
}

/**
 * The live committed heads of the tokens `ids` (their records without `data` and `mask`: nothing
 * is decrypted), in the order of `ids`; throws `not_found` for the first that is absent or expired.
 * What a call that checks tokens' existence and access but answers nothing of them reads (links).
 */
export async function mustReadHeads(ctx: Ctx, ids: readonly string[]): Promise<TokenHead[]> {
  const heads = await ctx.store.getTokenHeads(ctx.principal.tenantId, ids)
  return ids.map((id) => {
    const head = heads.find((h) => h.id === id)
    if (!head || (head.expires_at !== undefined && head.expires_at <= ctx.now())) throw notFound('token')
    return head
  })
}

/** A write the caller asks for: record ops, the guards they need, and the tokens they lock. */
export interface CallerWrite {
  checks: Check[]
  ops: Op[]
  locks: string[]
  /**
   * Ids in `locks` this call made itself (`newOrderedId`, for tokens whose body gave none). No one else
   * can name one before the call answers, so no transaction can have locked it: outside a
   * transaction they need no `token.unlocked` guard (one read, and on PostgreSQL one lock, less
   * per create). Inside one they are locked as any other.
   */
  minted?: readonly string[]
}

/**
 * Writes `ops` for the caller. Outside a transaction they apply at once, if `checks` hold and no
 * open transaction locks a token in `locks` (guarded for each but those the call `minted`). Inside
 * one they are staged: each op (a `token.put` or `token.delete`: nothing else enlists) becomes the
 * staged record of its token (`staged.put`, marked `creates` when the token is new to the store:
 * see `StagedWrite`), written with the lock records of `locks` (each guarded by `token.unlocked`)
 * and the transaction put again with its `version` one more, all guarded on the transaction being
 * unchanged since `openTransaction` read it and found it open and unexpired (a concurrent stage or
 * commit makes this write fail `transaction.unchanged`; see `enlist`). The write's size does not
 * depend on how much the transaction staged before. Committed state is untouched until commit. The
 * transaction's totals (`staged_writes`, `staged_chars`) move in that same put, so a write that
 * would take it past its bounds is refused (`validation_failed`, see `withStaged`) before anything
 * is staged, and concurrent enlists never pass them: one of them loses `transaction.unchanged` and
 * reads again.
 */
export async function tryWriteAs(
  ctx: Ctx,
  tx: StoredTransaction | null,
  write: CallerWrite,
): Promise<WriteResult> {
  const tenant = ctx.principal.tenantId
  const now = ctx.now()
  const unlocked = (id: string): Check => ({
    check: 'token.unlocked',
    tenant_id: tenant,
    id,
    now,
    ...(tx ? { except: tx.id } : {}),
  })
  // The ids the call did not mint: only those can be locked, or staged before.
  const made = new Set(write.minted)
  const guarded = made.size ? write.locks.filter((id) => !made.has(id)) : write.locks
  if (!tx) {
    // A lock the guard lets pass has expired (by this clock): the write deletes it, so the
    // transaction that held it can't commit over this write later (a server whose clock is behind
    // this one's would still find it open, and its commit's `lock.held` guards would pass).
    const taken = guarded.map((id): Op => ({ op: 'lock.delete', tenant_id: tenant, token_id: id }))
    return ctx.store.write({
      checks: [...write.checks, ...guarded.map(unlocked)],
      ops: [...write.ops, ...taken],
    })
  }
  const next = withStaged(tx, write.ops)
  const written = write.ops.map((op) => {
    if (op.op === 'token.put') return op.token.id
    if (op.op === 'token.delete') return op.id
    // A caller's write of anything else is refused (400), never a 500: nothing is staged.
    throw invalid('transaction', `stages token writes only, not ${op.op}`)
  })
  // What this transaction staged before over the tokens written (one read). Such a token must
  // still be locked by it: a write outside it that found the transaction expired (by its own clock,
  // perhaps ahead of this one) took the lock, and staging the token again must not put it back over
  // that acknowledged write. And one it staged as a create stays one.
  const restaged = await stagedRecords(ctx, tx, [
    ...new Set([...guarded, ...written.filter((id) => !made.has(id))]),
  ])
  // New to the store: staged as a create before, or a put whose id the call made or guards absent.
  const absent = new Set(
    write.checks.flatMap((c) => (c.check === 'token.absent' && c.tenant_id === tenant ? [c.id] : [])),
  )
  const creates = (id: string, put: boolean): boolean =>
    restaged.get(id)?.creates === true || (put && (made.has(id) || absent.has(id)))
  const ops = write.ops.map((op, i): Op => {
    const id = written[i]!
    const token = op.op === 'token.put' ? op.token : null
    const staged = { tenant_id: tenant, transaction_id: tx.id, token_id: id, seq: next.version, token }
    return { op: 'staged.put', staged: creates(id, token !== null) ? { ...staged, creates: true } : staged }
  })
  const lockCheck = (id: string): Check =>
    restaged.has(id)
      ? { check: 'lock.held', tenant_id: tenant, token_id: id, transaction_id: tx.id }
      : unlocked(id)
  const result = await ctx.store.write({
    checks: [
      { check: 'transaction.unchanged', tenant_id: tenant, id: tx.id, transaction: tx },
      ...tenantStagedBound(ctx, tx, next),
      ...write.checks,
      ...write.locks.map(lockCheck),
    ],
    ops: [{ op: 'transaction.put', transaction: next }, ...lockOps(tx, write.locks), ...ops],
  })
  if (!result.ok && result.failed.check === 'lock.held')
    throw conflict(`the transaction has expired: another write took token ${result.failed.token_id}`)
  return result
}

/**
 * The guard that keeps all of the tenant's open transactions within `maxStagedCharsPerTenant`
 * (`count.within` of `transaction.staged`, read in the write itself): none for a write that stages
 * no characters (deletes), so a tenant at its bound can still stage deletes and end transactions.
 */
function tenantStagedBound(ctx: Ctx, tx: StoredTransaction, next: StoredTransaction): Check[] {
  const adds = (next.staged_chars ?? 0) - (tx.staged_chars ?? 0)
  if (adds <= 0) return []
  const max = ctx.options.maxStagedCharsPerTenant - adds
  return [{ check: 'count.within', tenant_id: tx.tenant_id, kind: 'transaction.staged', max }]
}

/** Like `tryWriteAs`, but throws the matching `ServiceError` when a check fails. */
export async function writeAs(ctx: Ctx, tx: StoredTransaction | null, write: CallerWrite): Promise<void> {
  expectWritten(await tryWriteAs(ctx, tx, write))
}

/**
 * Reads the caller's transaction (if it enlisted), builds the write against it, and writes it;
 * rebuilds from a fresh read when a concurrent write changed the transaction (or linked a token the
 * write deletes) meanwhile, so writes staged at once all land, in some order. Throws the matching `ServiceError` on any other refusal.
 */
export async function enlist(
  ctx: Ctx,
  build: (tx: StoredTransaction | null) => Promise<CallerWrite> | CallerWrite,
): Promise<void> {
  await retryCas(async () => {
    const tx = await openTransaction(ctx)
    const result = await tryWriteAs(ctx, tx, await build(tx))
    if (result.ok) return { done: undefined }
    const rebuild = result.failed.check === 'transaction.unchanged' || result.failed.check === 'links.within'
    if (!rebuild) throw checkFailure(result.failed)
    return { lost: result.failed }
  })
}
