import { applyTransform, tokenAccess } from '../applications/index.js'
import type { CasTry, Ctx } from '../call/index.js'
import { checkFailure, retryCas } from '../call/index.js'
import type { Json, StoredToken, StoredTransaction, Token } from '../kernel/index.js'
import type { Check, Op } from '../store/index.js'
import { openTransaction, readToken, stagedOf, tryWriteAs, withStaged } from '../transactions/index.js'

/**
 * Token deduplication (`deduplicate_token`): a token asking for it whose fingerprint a live token
 * of the tenant already carries is not created; the existing token answers instead. Race-safe: the
 * write of a new token asking for it is guarded by `token.fingerprint_absent`, so of concurrent
 * creates of one duplicate exactly one writes and the others, refused, find and answer it.
 */

/** How many staged records one read takes while looking for a duplicate among them. */
const STAGED_PAGE = 500

/**
 * A token about to be created, as `newToken` made it from a create body: the record, whether the
 * body asked for deduplication (`deduplicate_token: true`), and the mask already evaluated on its
 * data when it was checked (`masked`), so its creator's answer does not evaluate it again.
 */
export interface NewToken {
  token: StoredToken
  deduplicate: boolean
  masked?: Json
}

/** The live tokens a transaction staged, by fingerprint (the first two staged of each), read once. */
type StagedByFingerprint = () => Promise<ReadonlyMap<string, readonly StoredToken[]>>

/**
 * The transaction's staged tokens by fingerprint, read page by page on first use and kept for the
 * rest of the request: a request's deduplicating creates read its staged records once, not once each
 * (100 of them over 16 MiB staged decrypted 1.6 GB).
 */
function stagedFingerprints(ctx: Ctx, tx: StoredTransaction): StagedByFingerprint {
  let read: Promise<Map<string, StoredToken[]>> | undefined
  const readAll = async () => {
    const found = new Map<string, StoredToken[]>()
    for (let after: string | undefined; ; ) {
      const page = await ctx.store.listStaged(ctx.principal.tenantId, tx.id, {
        limit: STAGED_PAGE,
        ...(after === undefined ? {} : { after }),
      })
      for (const s of page) {
        const t = s.token
        const live = t && (t.expires_at === undefined || t.expires_at > ctx.now())
        if (!live || t.fingerprint === undefined) continue
        // Two: one of them may be the very token looking for its duplicate.
        const same = found.get(t.fingerprint)
        if (!same) found.set(t.fingerprint, [t])
        else if (same.length < 2) same.push(t)
      }
      if (page.length < STAGED_PAGE) return found
      after = page[page.length - 1]!.token_id
    }
  }
  return () => (read ??= readAll())
}

/**
 * A live token of the caller's tenant (as its transaction sees it) with `token`'s fingerprint, other
 * than itself; `shadowed` when there is none only because the transaction deleted or changed the
 * committed ones (the committed guard `token.fingerprint_absent` would then fail for good).
 */
export async function findDuplicate(
  ctx: Ctx,
  tx: StoredTransaction | null,
  token: StoredToken,
  staged: StagedByFingerprint | null = tx && tx.version > 0 ? stagedFingerprints(ctx, tx) : null,
): Promise<{ existing: StoredToken | null; shadowed: boolean }> {
  const fingerprint = token.fingerprint
  if (fingerprint === undefined) return { existing: null, shadowed: false }
  const same = (t: StoredToken | null): t is StoredToken =>
    t !== null && t.id !== token.id && t.fingerprint === fingerprint
  // The transaction's own staged tokens (only for a create that deduplicates).
  const mine = staged ? (await staged()).get(fingerprint)?.find(same) : undefined
  if (mine) return { existing: mine, shadowed: false }
  const page = await ctx.store.listTokens(ctx.principal.tenantId, {
    offset: 0,
    limit: 100,
    fingerprint,
    now: ctx.now(),
  })
  const stagedIds = await stagedOf(
    ctx,
    tx,
    page.items.map((t) => t.id),
  )
  for (const candidate of page.items) {
    const seen = stagedIds.has(candidate.id) ? await readToken(ctx, tx, candidate.id) : candidate
    if (same(seen)) return { existing: seen, shadowed: false }
  }
  return { existing: null, shadowed: page.total > 0 }
}

/**
 * The outcome for one requested token: the token that answers, whether it already existed
 * (`deduplicated`), and what was asked (`requested`: its wish to deduplicate and its evaluated mask).
 */
export interface Created {
  token: StoredToken
  deduplicated: boolean
  requested: NewToken
}

/**
 * Writes `tokens` for the caller (enlisted in its transaction unless `options.tx` is null), each
 * asking for deduplication answered by its duplicate when there is one (an earlier token of the
 * same request included). `extra(created)` adds ops and checks that depend on the outcome (a link
 * to the created child). Answers each token's outcome, in order.
 */
export async function writeTokens(
  ctx: Ctx,
  tokens: readonly NewToken[],
  build: (tx: StoredTransaction | null, written: StoredToken[]) => Promise<{ checks: Check[] }>,
  options: {
    enlist: boolean
    extra?: (created: Created[]) => { checks: Check[]; ops: Op[] }
    /** The ids of `tokens` the call made itself: see `CallerWrite.minted`. */
    minted?: readonly string[]
  },
): Promise<Created[]> {
  // Tried again after losing a race: a concurrent duplicate, or a concurrent stage in its transaction.
  return retryCas(async (): Promise<CasTry<Created[]>> => {
    const tx = options.enlist ? await openTransaction(ctx) : null
    // Past the transaction's bounds, refused before any duplicate is looked for (a 400, as staging would).
    if (tx)
      withStaged(
        tx,
        tokens.map((t): Op => ({ op: 'token.put', token: t.token })),
      )
    const staged = tx && tx.version > 0 ? stagedFingerprints(ctx, tx) : null
    const created: Created[] = []
    const written: StoredToken[] = []
    const guards: Check[] = []
    for (const requested of tokens) {
      const { token } = requested
      if (requested.deduplicate && token.fingerprint !== undefined) {
        const earlier = written.find((t) => t.fingerprint === token.fingerprint)
        const found = earlier
          ? { existing: earlier, shadowed: false }
          : await findDuplicate(ctx, tx, token, staged)
        if (found.existing) {
          created.push({ token: found.existing, deduplicated: true, requested })
          continue
        }
        // Committed duplicates the transaction deleted or changed are locked by it: no guard then.
        if (!found.shadowed)
          guards.push({
            check: 'token.fingerprint_absent',
            tenant_id: ctx.principal.tenantId,
            fingerprint: token.fingerprint,
            now: ctx.now(),
          })
      }
      written.push(token)
      created.push({ token, deduplicated: false, requested })
    }
    const extra = options.extra?.(created) ?? { checks: [], ops: [] }
    const { checks } = await build(tx, written)
    if (!written.length && !extra.ops.length) return { done: created }
    const result = await tryWriteAs(ctx, tx, {
      checks: [...checks, ...guards, ...extra.checks],
      ops: [...written.map((token): Op => ({ op: 'token.put', token })), ...extra.ops],
      locks: written.map((t) => t.id),
      ...(options.minted ? { minted: options.minted } : {}),
    })
    if (result.ok) return { done: created }
    const retry =
      result.failed.check === 'token.fingerprint_absent' || result.failed.check === 'transaction.unchanged'
    if (!retry) throw checkFailure(result.failed)
    return { lost: result.failed }
  })
}

/**
 * How a deduplicated token answers its creator: under the caller's `token:read` transform when it
 * may read it; otherwise only `id`, `type`, `tenant_id`, `fingerprint` and `containers`, so a
 * duplicate does not leak what the caller could not read.
 */
export function shownDuplicate(ctx: Ctx, token: StoredToken): Token {
  const transform = tokenAccess(ctx.principal, 'token:read', token)
  if (transform) return applyTransform(token, transform, undefined, ctx.principal)
  const redacted = {
    id: token.id,
    type: token.type,
    tenant_id: token.tenant_id,
    containers: token.containers,
    ...(token.fingerprint === undefined ? {} : { fingerprint: token.fingerprint }),
  }
  // The reference's redacted answer lacks fields every token has; callers get exactly these.
  return redacted as Token
}
