import { statSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { ABORT } from 'lmdb'
import type { Check, Op } from '../../src/kernel/types.js'
import type { WriteResult } from '../../src/store/contract.js'
import { StoreError } from '../../src/store/error.js'
import { applyOp } from './apply.js'
import { holds } from './checks.js'
import { DATA_FILE, type Databases, openDatabases } from './env.js'
import { diskError, needsReopen } from './faults.js'
import type { FileStore, FileStoreOptions } from './options.js'
import { lmdbReads, type Snapshot } from './reads.js'

/**
 * A durable store in one directory, on LMDB (the `lmdb` package): every record kind in its own
 * ordered database keyed by tenant, then id, and the indexes the reads need (key hashes, nonces,
 * exact terms, link order, expiry times) as more ordered databases beside them.
 *
 * - `write` runs its checks and ops inside one LMDB write transaction (a child transaction of the
 *   one that the writes queued since the last commit share): the checks read what the transaction
 *   sees, and either every op applies with its index entries or nothing does. LMDB lets one writer
 *   at a time hold the environment, across every process that opened it, so writes are atomic and
 *   linearizable across processes too.
 * - A write is acknowledged once its commit is on disk (LMDB's synchronous commit: data, then meta
 *   page, each synced). Concurrent writes share commits: those queued while one commits go
 *   together in the next (up to about 1000 ops a commit, one write of each tenant in turn).
 * - Reads take the newest committed snapshot at each call (what any process committed before the
 *   call is seen) and read ranges of ordered keys; they never wait for a writer.
 * - Nothing is loaded at open: opening checks the format marker and is instant at any size.
 * - A failed commit (a full disk, an I/O error) writes nothing and is answered with a `StoreError`
 *   (`full` or `unavailable`: HTTP 503 with `Retry-After`); the next write tries again, so the
 *   store takes writes once the disk does, without a restart (LMDB grows its map by itself). After
 *   an error that leaves the environment unusable, it is opened again before the next call.
 * - The directory is 0700 and its files 0600; a directory holding files that are not this store's
 *   refuses to open with a `StoreError` (`corrupt`, `schema_newer`, `unavailable`).
 *
 * On disk is only what the core hands the store (keys and nonces are SHA-256 hashes already; the
 * sealed store encrypts token data before it gets here).
 */
/** The tenant a write is for: its first op's (or check's) `tenant_id`, `''` for none (tenants, official formulas). */
function tenantOf(write: { checks: readonly Check[]; ops: readonly Op[] }): string {
  const first = (write.ops[0] ?? write.checks[0]) as unknown as Record<string, unknown> | undefined
  if (!first) return ''
  if (typeof first['tenant_id'] === 'string') return first['tenant_id']
  for (const value of Object.values(first)) {
    const nested = value as { tenant_id?: unknown } | null
    if (nested && typeof nested === 'object' && typeof nested.tenant_id === 'string') return nested.tenant_id
  }
  return ''
}

/** How many ops one commit carries at most (more wait for the next): bounds the main thread's share. */
const GROUP_OPS = 1000

export async function fileStore(options: FileStoreOptions): Promise<FileStore> {
  const dir = resolve(options.path)
  if (options.durability !== undefined && options.durability !== 'fsync' && options.durability !== 'none')
    throw new TypeError(`fileStore: durability must be 'fsync' or 'none'`)
  const durable = (options.durability ?? 'fsync') === 'fsync'
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`))
  const applyMs = options.applyMs ?? 10
  if (!(applyMs >= 0)) throw new TypeError('fileStore: applyMs must be a number >= 0')
  let dbs: Databases = await openDatabases(dir, durable)
  /** Bumped with every move of the read snapshot this store's commits and reopening cause (see `Snapshot`). */
  const snapshot: Snapshot = { moves: 0 }
  let closed = false
  let healthy = true
  let writes = 0
  let commits = 0
  /** While set, the environment is being opened again after a fatal error; calls wait for it. */
  let reopening: Promise<void> | null = null

  const use = (): Databases => {
    if (closed) throw new StoreError('closed', `fileStore: the store at ${dir} is closed`)
    if (reopening) throw new StoreError('unavailable', 'fileStore: the store is reopening', { retryAfter: 1 })
    return dbs
  }

  const reopen = () => {
    reopening ??= (async () => {
      const old = dbs
      await old.env.close().catch(() => {})
      old.release()
      for (;;) {
        try {
          dbs = await openDatabases(dir, durable)
          snapshot.moves++
          log(`fileStore: ${dir}: reopened after a fatal write error`)
          return
        } catch (error) {
          log(`fileStore: ${dir}: reopening failed, retrying in 1 s: ${(error as Error).message}`)
          await new Promise((r) => setTimeout(r, 1000).unref())
          if (closed) return
        }
      }
    })().finally(() => {
      reopening = null
    })
  }

  /** A write waiting for its commit. */
  interface Pending {
    checks: readonly Check[]
    ops: readonly Op[]
    resolve: (result: WriteResult) => void
    reject: (error: unknown) => void
    /** Set once a commit it was part of was dropped: it is applied in a child transaction of its own. */
    alone?: boolean
  }
  /** Writes queued for the next commit, and the commit under way (one at a time per process). */
  let queue: Pending[] = []
  let committing = false

  /** One write's checks and ops: no op applies unless every check holds. */
  const apply = (current: Databases, p: Pending): WriteResult => {
    for (const c of p.checks) if (!holds(current, c)) return { ok: false, failed: c }
    for (const op of p.ops) applyOp(current, op)
    return { ok: true }
  }

  /**
   * The writes of the next commit, taken from the queue: at most about GROUP_OPS ops (the main
   * thread applies them while the commit waits), one write of each tenant in turn, each tenant's in
   * the order they came. So a tenant with thousands of writes queued holds another's back by at most
   * one commit, not by all of its own.
   */
  const nextGroup = (): Pending[] => {
    const byTenant = new Map<string, Pending[]>()
    for (const p of queue) {
      const tenant = tenantOf(p)
      const own = byTenant.get(tenant)
      if (own) own.push(p)
      else byTenant.set(tenant, [p])
    }
    const lists = [...byTenant.values()]
    const group: Pending[] = []
    let ops = 0
    fill: for (let round = 0; group.length < queue.length; round++) {
      for (const list of lists) {
        const p = list[round]
        if (!p) continue
        if (group.length > 0 && ops + p.ops.length > GROUP_OPS) break fill
        group.push(p)
        ops += p.ops.length
      }
    }
    const taken = new Set(group)
    queue = queue.filter((p) => !taken.has(p))
    return group
  }

  /**
   * Group commit: the writes queued when LMDB has begun the next write transaction go into it, and
   * are answered once that transaction's commit is on disk. The transaction is asked for as soon as
   * a write arrives while none is under way (or the one under way ends with writes queued); the
   * group is taken only once LMDB runs it, so every write that arrived meanwhile (while the previous
   * commit synced, or before the write thread began) joins it.
   *
   * The group applies inside one child transaction, write after write. An op that throws partway
   * through a write (LMDB refusing a key, say) would leave part of that write behind, so it drops the
   * whole child transaction (LMDB's `ABORT`: nothing of the group is committed) and the group goes
   * back to the front of the queue marked `alone`: the next commit applies each of those writes in
   * a child transaction of its own, so the failing one fails alone and whole and the others land.
   */
  const flush = () => {
    if (committing || queue.length === 0) return
    committing = true
    const current = dbs
    let group: Pending[] | null = null
    const results: (WriteResult | { error: unknown })[] = []
    /** The commit: the group's transaction, or its refusal (an environment closing under it throws at once). */
    const commit = (run: () => unknown): Promise<unknown> => {
      try {
        return current.env.childTransaction(run)
      } catch (error) {
        return Promise.reject(error)
      }
    }
    commit(() => {
      group = nextGroup()
      // The main thread applies the group while reads wait: past APPLY_MS the rest of the group
      // goes back to the front of the queue, for the next commit (`applyMs`), so no read waits much longer.
      const until = performance.now() + applyMs
      for (const p of group) {
        if (results.length > 0 && performance.now() > until) break
        if (p.alone) {
          try {
            results.push(current.env.transactionSync(() => apply(current, p)))
          } catch (error) {
            results.push({ error })
          }
          continue
        }
        try {
          results.push(apply(current, p))
        } catch {
          for (const q of group) q.alone = true
          queue.unshift(...group)
          group = []
          return ABORT
        }
      }
      if (results.length < group.length) queue.unshift(...group.splice(results.length))
      return undefined
    })
      .then(
        () => {
          // LMDB moved the read snapshot past this commit: what reads kept from the last one is stale.
          snapshot.moves++
          // An empty group: its transaction was dropped (`ABORT`), and its writes wait for the next.
          const done = group ?? []
          if (done.length === 0) return
          writes += done.length
          commits++
          if (!healthy) {
            healthy = true
            log(`fileStore: ${dir}: writes resumed`)
          }
          done.forEach((p, i) => {
            const r = results[i]!
            if ('error' in r) p.reject(r.error)
            else p.resolve(r)
          })
        },
        async (error: unknown) => {
          snapshot.moves++
          // A transaction that failed before LMDB ran it fails the writes it would have taken.
          const failed = group ?? nextGroup()
          const commitError = (error as { commitError?: Promise<unknown> }).commitError
          const cause = commitError
            ? await commitError.then(
                () => error,
                (e: unknown) => e,
              )
            : error
          healthy = false
          log(
            `fileStore: ${dir}: a commit failed; writes resume once the disk takes them: ${(cause as Error)?.message}`,
          )
          if (needsReopen(cause)) reopen()
          const answer = diskError(cause, dir)
          for (const p of failed) p.reject(answer)
        },
      )
      .finally(() => {
        committing = false
        flush()
      })
  }

  return {
    persistent: true,
    write: async (batch): Promise<WriteResult> => {
      const current = use()
      const checks = batch.checks ?? []
      if (batch.ops.length === 0) {
        // Nothing to write: the checks on the newest snapshot answer as a write would.
        current.env.resetReadTxn()
        snapshot.moves++
        const failed = checks.find((c) => !holds(current, c))
        return failed ? { ok: false, failed } : { ok: true }
      }
      return new Promise<WriteResult>((resolve, reject) => {
        queue.push({ checks, ops: batch.ops, resolve, reject })
        flush()
      })
    },
    ...lmdbReads(use, snapshot),
    stats: () => {
      let bytes = 0
      try {
        bytes = statSync(join(dir, DATA_FILE)).size
      } catch {}
      return { healthy, writes, commits, bytes }
    },
    close: async () => {
      if (closed) return
      closed = true
      // Writes already queued are committed and answered first.
      while (committing || queue.length) await new Promise((r) => setTimeout(r, 2))
      await reopening
      await dbs.env.close()
      dbs.release()
    },
  }
}
