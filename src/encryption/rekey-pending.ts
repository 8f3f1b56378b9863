import type { IdempotencyRecord, StagedWrite, StoredTransaction } from '../kernel/index.js'
import { ServiceError } from '../kernel/index.js'
import type { Check, Op } from '../store/index.js'
import { openTokenIntent, sealTokenIntent } from './intent-sealing.js'
import { sealedVersion } from './keyring.js'
import type { RekeyDeps } from './rekey-deps.js'
import { openAnswer, openStaged, sealedPayload, sealOp } from './sealing.js'

// What a re-encryption pass re-seals besides tokens and configurations: records acknowledged but
// not final — kept idempotency answers (24 hours) and open transactions' staged writes (until the
// transaction ends) — so that a repeat or a commit after the old version is retired still reads.

/** How many idempotency records, transactions or staged writes one read of the sweep takes. */
const PAGE = 100

/** How many times a transaction staged to meanwhile is read again before its old versions are kept instead. */
const STAGED_ATTEMPTS = 3

/** The version an idempotency record's kept answer is sealed under; none without an answer. */
const answerVersion = (r: IdempotencyRecord) => (r.answer === undefined ? undefined : sealedVersion(r.answer))

/** The version a staged write's token is sealed under; none for a staged delete or legacy plaintext. */
function stagedVersion(w: StagedWrite): number | undefined {
  const payload = sealedPayload(w.token?.data)
  return payload === undefined ? undefined : sealedVersion(payload)
}

/** The op `open` answers (its record opened) sealed anew under the current version; null when it does not open. */
async function resealedOp(deps: RekeyDeps, open: () => Promise<Op>): Promise<Op | null> {
  try {
    return await sealOp(deps.sealing, await open())
  } catch (error) {
    if (error instanceof ServiceError && error.code === 'unreadable') return null
    throw error
  }
}

/**
 * Re-seals the tenant's kept idempotency answers not under `to`, a page at a time with a turn
 * between two, each guarded by `idempotency.claimed` on the claim read: a kept answer is written
 * once under its claim (pending, then done), so a record that still holds the claim is the one
 * read; one replaced (a new claim) or deleted meanwhile is left to the concurrent write, sealed
 * under the current version. Answers the versions still held by answers that do not open (they
 * keep their version, which is then not retired).
 */
export async function resealAnswers(deps: RekeyDeps, tenantId: string, to: number): Promise<Set<number>> {
  const kept = new Set<number>()
  let after: string | undefined
  for (;;) {
    const page = await deps.store.listIdempotency(tenantId, { ...(after ? { after } : {}), limit: PAGE })
    const pairs: { check: Check; op: Op }[] = []
    for (const stored of page) {
      const version = answerVersion(stored)
      if (version === undefined || version === to) continue
      const op = await resealedOp(deps, async () => ({
        op: 'idempotency.put',
        record: { ...stored, answer: await openAnswer(deps.sealing, { ...stored, answer: stored.answer! }) },
      }))
      if (!op) kept.add(version)
      else
        pairs.push({
          check: { check: 'idempotency.claimed', tenant_id: tenantId, id: stored.id, claim: stored.claim },
          op,
        })
    }
    await writeEach(deps, pairs)
    if (page.length < PAGE) return kept
    after = page[page.length - 1]!.id
    await deps.turn()
  }
}

/**
 * Re-seals the tenant's token intents not under `to`, a page at a time, each guarded by
 * `token_intent.present`: an intent is never changed once made (only converted or deleted), so
 * one still there is the one read, and one converted or deleted meanwhile is not brought back.
 * Answers the versions still held by intents that do not open (they keep their version).
 */
export async function resealIntents(deps: RekeyDeps, tenantId: string, to: number): Promise<Set<number>> {
  const kept = new Set<number>()
  let after: string | undefined
  for (;;) {
    const page = await deps.store.listTokenIntents(tenantId, { ...(after ? { after } : {}), limit: PAGE })
    const pairs: { check: Check; op: Op }[] = []
    for (const stored of page) {
      const payload = sealedPayload(stored.data)
      const version = payload === undefined ? undefined : sealedVersion(payload)
      if (version === undefined || version === to) continue
      const intent = await openTokenIntent(deps.sealing, stored).catch((error: unknown) => {
        if (error instanceof ServiceError && error.code === 'unreadable') return null
        throw error
      })
      if (!intent) kept.add(version)
      else
        pairs.push({
          check: { check: 'token_intent.present', tenant_id: tenantId, id: stored.id },
          op: { op: 'token_intent.put', intent: await sealTokenIntent(deps.sealing, intent) },
        })
    }
    await writeEach(deps, pairs)
    if (page.length < PAGE) return kept
    after = page[page.length - 1]!.id
    await deps.turn()
  }
}

/** `pairs` in one write; when a guard fails, each alone (the ones whose guard fails are left). */
async function writeEach(deps: RekeyDeps, pairs: { check: Check; op: Op }[]): Promise<void> {
  if (!pairs.length) return
  const all = await deps.store.write({ checks: pairs.map((p) => p.check), ops: pairs.map((p) => p.op) })
  if (!all.ok) for (const p of pairs) await deps.store.write({ checks: [p.check], ops: [p.op] })
}

/**
 * Re-seals the staged writes of the tenant's open transactions not under `to`, a page at a time
 * with a turn between two. Each page's write is guarded by `transaction.unchanged` on the
 * transaction read (a staging bumps its version; a commit, rollback or expiry ends it in the write
 * that deletes its staged records, or before): a concurrent staging or end wins, and the
 * transaction is read again, at most `STAGED_ATTEMPTS` times. Answers the versions still held by
 * staged writes left: of a transaction that kept changing, that do not open, or of a transaction
 * already ended whose staged records are still being cleared (they are read by no one and go
 * soon; they keep their version, which is then not retired).
 */
export async function resealStaged(deps: RekeyDeps, tenantId: string, to: number): Promise<Set<number>> {
  const kept = new Set<number>()
  let after: string | undefined
  for (;;) {
    const page = await deps.store.listTransactions(tenantId, { ...(after ? { after } : {}), limit: PAGE })
    for (const tx of page) {
      let left: Set<number> | null = await resealTransaction(deps, tx, to)
      for (let attempt = 1; left === null && attempt < STAGED_ATTEMPTS; attempt++) {
        const again = await deps.store.getTransaction(tenantId, tx.id)
        left = again ? await resealTransaction(deps, again, to) : new Set()
      }
      for (const v of left ?? (await stagedVersions(deps, tx))) if (v !== to) kept.add(v)
    }
    if (page.length < PAGE) return kept
    after = page[page.length - 1]!.id
    await deps.turn()
  }
}

/** The versions every staged write of `tx` is sealed under. */
async function stagedVersions(deps: RekeyDeps, tx: StoredTransaction): Promise<Set<number>> {
  const versions = new Set<number>()
  let after: string | undefined
  for (;;) {
    const page = await deps.store.listStaged(tx.tenant_id, tx.id, {
      ...(after ? { after } : {}),
      limit: PAGE,
    })
    for (const w of page) {
      const v = stagedVersion(w)
      if (v !== undefined) versions.add(v)
    }
    if (page.length < PAGE) return versions
    after = page[page.length - 1]!.token_id
    await deps.turn()
  }
}

/**
 * One attempt at re-sealing the staged writes of `tx` (as read): null when a write found it
 * changed; else the versions left (staged writes that do not open, or every version of an ended
 * transaction's records).
 */
async function resealTransaction(
  deps: RekeyDeps,
  tx: StoredTransaction,
  to: number,
): Promise<Set<number> | null> {
  if (tx.state !== 'open') return stagedVersions(deps, tx)
  const kept = new Set<number>()
  const check: Check = { check: 'transaction.unchanged', tenant_id: tx.tenant_id, id: tx.id, transaction: tx }
  let after: string | undefined
  for (;;) {
    const page = await deps.store.listStaged(tx.tenant_id, tx.id, {
      ...(after ? { after } : {}),
      limit: PAGE,
    })
    const ops: Op[] = []
    for (const staged of page) {
      const version = stagedVersion(staged)
      if (version === undefined || version === to) continue
      const op = await resealedOp(deps, async () => ({
        op: 'staged.put',
        staged: await openStaged(deps.sealing, staged),
      }))
      if (op) ops.push(op)
      else kept.add(version)
    }
    if (ops.length && !(await deps.store.write({ checks: [check], ops })).ok) return null
    if (page.length < PAGE) return kept
    after = page[page.length - 1]!.token_id
    await deps.turn()
  }
}
