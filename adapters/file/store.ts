import { statSync } from 'node:fs'
import { join, resolve } from 'node:path'
import type { StoreReads, WriteResult } from '../../src/store/index.js'
import { holds } from './checks.js'
import { type FileState, queued, reopen, use } from './commits.js'
import { DATA_FILE, openDatabases } from './env.js'
import { needsReopen, readError } from './faults.js'
import { forwardedWrite, resultOf } from './forward.js'
import type { FileStore, FileStoreOptions } from './options.js'
import { lmdbReads } from './reads.js'
import { tokenRecords } from './token-codec.js'

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
 *   page, each synced); a write of audit entries only (a read's) once its commit is in the file,
 *   unsynced (see `flush`). Concurrent writes share commits: those queued while one commits go
 *   together in the next (up to about 1000 ops a commit, one write of each tenant in turn).
 * - Reads take the newest committed snapshot at each call (what any process committed before the
 *   call is seen) and read ranges of ordered keys; they never wait for a writer.
 * - Nothing is loaded at open: opening checks the format marker and is instant at any size.
 * - A failed read answers a `StoreError` too (`readError`: `unavailable`, or `corrupt` for a damaged
 *   file), never LMDB's own error; after LMDB's panic the environment is opened again.
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
export async function fileStore(options: FileStoreOptions): Promise<FileStore> {
  const dir = resolve(options.path)
  if (options.durability !== undefined && options.durability !== 'fsync' && options.durability !== 'none')
    throw new TypeError(`fileStore: durability must be 'fsync' or 'none'`)
  const durable = (options.durability ?? 'fsync') === 'fsync'
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`))
  const applyMs = options.applyMs ?? 10
  if (!(applyMs >= 0)) throw new TypeError('fileStore: applyMs must be a number >= 0')
  const s: FileState = {
    dir,
    durable,
    log,
    applyMs,
    dbs: await openDatabases(dir, durable),
    snapshot: { moves: 0 },
    closed: false,
    healthy: true,
    writes: 0,
    commits: 0,
    reopening: null,
    queue: [],
    committing: false,
  }
  return {
    persistent: true,
    write: async (batch): Promise<WriteResult> => {
      const current = use(s)
      const checks = batch.checks ?? []
      if (batch.ops.length === 0) {
        // Nothing to write: the checks on the newest snapshot answer as a write would.
        current.env.resetReadTxn()
        s.snapshot.moves++
        const failed = checks.find((c) => !holds(current, c))
        return failed ? { ok: false, failed } : { ok: true }
      }
      if (options.commitsOn) {
        const { write, transfer } = forwardedWrite(batch)
        return resultOf(await options.commitsOn(write, transfer))
      }
      return queued(s, {
        checks,
        ops: batch.ops,
        records: tokenRecords(batch.ops),
        deferSync: batch.deferSync,
      })
    },
    commitForwarded: async (write) => {
      use(s)
      return queued(s, write)
    },
    ...codedReads(
      lmdbReads(() => use(s), s.snapshot),
      s,
    ),
    stats: () => {
      let bytes = 0
      try {
        bytes = statSync(join(dir, DATA_FILE)).size
      } catch {}
      return { healthy: s.healthy, writes: s.writes, commits: s.commits, bytes }
    },
    close: async () => {
      if (s.closed) return
      s.closed = true
      // Writes already queued are committed and answered first.
      while (s.committing || s.queue.length) await new Promise((r) => setTimeout(r, 2))
      await s.reopening
      await s.dbs.env.close()
      s.dbs.release()
    },
  }
}

/**
 * `reads` whose failures are `StoreError`s (`readError`): an error of LMDB's (a full reader table,
 * an I/O error, a damaged page) is answered as the store's, with its code, never as a fault of the
 * service (HTTP 500 for all of them); after LMDB's panic the environment is opened again.
 */
function codedReads(reads: StoreReads, s: FileState): StoreReads {
  const failed = (error: unknown): never => {
    if (needsReopen(error)) reopen(s)
    throw readError(error)
  }
  const out: Record<string, unknown> = {}
  for (const [name, read] of Object.entries(reads) as [string, (...args: unknown[]) => unknown][]) {
    out[name] = (...args: unknown[]) => {
      try {
        const result = read(...args)
        return result instanceof Promise ? result.catch(failed) : result
      } catch (error) {
        return failed(error)
      }
    }
  }
  return out as StoreReads
}
