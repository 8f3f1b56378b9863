import { chmod, mkdir, readdir, truncate, unlink } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import type { WriteResult } from '../../src/store/contract.js'
import { StoreError } from '../../src/store/error.js'
import type { MemoryState } from '../../src/store/memory-state.js'
import { modelReads } from '../../src/store/model-reads.js'
import type { Op } from '../../src/types.js'
import { cloneJson } from './clone.js'
import { beginCompaction, type Generation, writeSnapshotJob } from './compact.js'
import { diskError, PROBE_FILE, probeDisk } from './faults.js'
import { journalName, parseName } from './files.js'
import { closeFd, DIRECTORY_MODE, fsync, openFd, syncDirectory } from './io.js'
import { DURABLE, Group, Journal } from './journal.js'
import { DEFAULT_LOCK_STALE_MS, LOCK_FILE, lockDirectory, lockedByAnother } from './lock.js'
import type { FileStore, FileStoreOptions, FileStoreStep } from './options.js'
import { recordPayload } from './record.js'
import { recover } from './recover.js'

const MiB = 1024 * 1024

const nonNegative = (name: string, value: number) => {
  if (!Number.isFinite(value) || value < 0)
    throw new TypeError(`fileStore: ${name} must be a finite number >= 0`)
  return value
}

/**
 * A durable store in one directory: the state lives in memory (a `MemoryState`) and every
 * acknowledged write is in an append-only journal on disk, compacted now and then into a snapshot.
 *
 * - `write` checks and applies a batch synchronously (atomic and serialized in this process), then
 *   appends one checksummed journal record holding its ops, and resolves once that record is
 *   durable. Concurrent writes share flushes (group commit). A batch whose check fails writes
 *   nothing, and is answered once the writes it saw are durable. Reads answer from memory at once.
 * - Opening replays the newest snapshot and its journal. A torn tail (a crash mid-append) is cut
 *   off; damage anywhere else fails the open with an Error naming the file and byte offset.
 * - When a write or sync fails (a full disk, an I/O error), the writes of that flush and those queued
 *   behind it are rejected with a `StoreError` (`full` or `unavailable`: HTTP 503 with
 *   `Retry-After`), and so are later writes while the store heals: it cuts the journal back to its
 *   last durable byte, rebuilds memory from the files (so nothing refused stays visible, nothing
 *   acknowledged goes missing), and resumes writes once a probe write reaches the disk — by itself,
 *   retrying every second. Reads are served throughout (until the rebuild, they may still see the
 *   refused writes, as they may see any write whose flush is pending).
 * - Compaction (once the journal outgrows `compactRatio` × the snapshot and `compactMinBytes`)
 *   starts a new journal, copies the state's records into a view in slices of about 4 ms (writes
 *   wait meanwhile, a few ms per million records; reads go on), then writes the snapshot from that
 *   view as a stream of checksummed frames, again in slices, while calls go on and writes go into
 *   the new journal. No size ceiling: no step holds the whole state as one string or buffer.
 *   Acknowledged writes survive a crash at any step (a reopen replays the old snapshot and both
 *   journals until the new snapshot is in place).
 * - A failed compaction removes its temp file; the store goes on (its files hold every write) and
 *   tries again after 10 s.
 * - One writer: the directory is locked until `close()`, which waits for pending writes. The `LOCK`
 *   file names the holder's pid, boot and PID namespace and carries a heartbeat, so a second open —
 *   in this process, another live one, or one in another container sharing the directory — fails.
 * - Leftovers of a crash (a compaction's temp file, a probe file) are removed before anything is
 *   written, so a start never fails on them; a journal tail that is not whole records is cut off and
 *   logged (count and offset), or refused with `onTornTail: 'refuse'`.
 *
 * On disk is only what the core hands the store (keys and nonces are SHA-256 hashes already).
 */
/**
 * Whether `op` takes data out of the state as a delete does (what the delete share of compaction
 * counts): a delete, or a token put without the `cvc_expires_at` the stored token has (a card
 * rewritten without its cvc), judged before `op` applies.
 */
function removesData(s: MemoryState, op: Op): boolean {
  if (op.op.endsWith('.delete')) return true
  return (
    op.op === 'token.put' &&
    op.token.cvc_expires_at === undefined &&
    s.hasCvcDeadline(op.token.tenant_id, op.token.id)
  )
}

export async function fileStore(options: FileStoreOptions): Promise<FileStore> {
  const dir = resolve(options.path)
  const durable = (options.durability ?? 'fsync') === 'fsync'
  if (options.durability !== undefined && options.durability !== 'fsync' && options.durability !== 'none') {
    throw new TypeError(`fileStore: durability must be 'fsync' or 'none'`)
  }
  if (options.sync !== undefined && options.sync !== 'fdatasync' && options.sync !== 'dsync') {
    throw new TypeError(`fileStore: sync must be 'fdatasync' or 'dsync'`)
  }
  const sync = durable ? (options.sync ?? 'fdatasync') : 'none'
  const dsync = sync === 'dsync'
  const ratio = nonNegative('compactRatio', options.compactRatio ?? 2)
  const minBytes = nonNegative('compactMinBytes', options.compactMinBytes ?? 4 * MiB)
  const deleteShare = nonNegative('compactDeleteShare', options.compactDeleteShare ?? 0.25)
  /** Ops journaled since the last compaction, and how many of them deleted something. */
  let opsSince = 0
  let deletesSince = 0
  /** Deletes amount to `deleteShare` of what the journal holds (and it holds 1 MiB): rewrite them out. */
  const deletesDue = () =>
    deletesSince > 0 && journal.size >= Math.min(minBytes, MiB) && deletesSince >= deleteShare * opsSince
  const hook = options.hooks?.step
  const step = (name: FileStoreStep) => hook?.(name)

  const made = await mkdir(dir, { recursive: true, mode: DIRECTORY_MODE })
  // The directory holds only this store's files: its owner alone may list or enter it.
  await chmod(dir, DIRECTORY_MODE)
  // A new directory's name lives in its parent: sync each parent of what was created.
  if (made !== undefined && durable) {
    for (let d = dir; d !== dirname(made); d = dirname(d)) await syncDirectory(dirname(d))
  }
  const staleMs = nonNegative('lockStaleMs', options.lockStaleMs ?? DEFAULT_LOCK_STALE_MS)
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`))
  if (
    options.onTornTail !== undefined &&
    options.onTornTail !== 'truncate' &&
    options.onTornTail !== 'refuse'
  ) {
    throw new TypeError(`fileStore: onTornTail must be 'truncate' or 'refuse'`)
  }
  const policy = { onTornTail: options.onTornTail ?? 'truncate', log } as const
  // A crash's leftovers may fill the disk: remove them before the lock file is written (unless a
  // live store holds the directory, whose files are its own).
  if (!(await lockedByAnother(dir, staleMs))) await removeLeftovers(dir)
  const lock = await lockDirectory(dir, staleMs)
  const progress = options.onRecoveryProgress
  let recovered: Awaited<ReturnType<typeof recover>>
  try {
    recovered = await recover(dir, durable, dsync, policy, progress)
  } catch (error) {
    await lock.release()
    throw error
  }

  let requested: Group | null = null
  const g: Generation = {
    dir,
    durable,
    dsync,
    state: recovered.state,
    journal: undefined as unknown as Journal,
    generation: recovered.generation,
    journalGeneration: recovered.journalGeneration,
    snapshotBytes: recovered.snapshotBytes,
    compactions: 0,
    holdMs: 0,
    compactionMs: 0,
    step,
  }
  /** A compaction writing its snapshot beside the calls, if one is. */
  let background: Promise<void> | null = null
  /** While set, writes wait for it: a compaction is copying the state. */
  let held: Promise<void> | null = null
  const hold = () => {
    let release!: () => void
    held = new Promise<void>((resolve) => {
      release = resolve
    })
    return () => {
      held = null
      release()
    }
  }
  /** While set, writes are refused with it: the store is healing from a failed flush or compaction. */
  let fault: Error | null = null
  let healing = false
  let retry: NodeJS.Timeout | undefined
  /** Automatic compaction waits until then after a failed one (ms, `performance.now()`). */
  let compactAfter = 0
  let closing: Promise<void> | null = null

  /**
   * Heals after a fault: cuts the journal back to its last durable byte (a failed flush may have
   * left part of itself there), rebuilds memory from the files, and, after a disk error, waits for
   * a probe write to reach the disk; then resumes writes. Retries every second until it succeeds.
   */
  const heal = async (probe: boolean) => {
    if (healing || closing) return
    healing = true
    try {
      await background
      await journal.idle()
      if (!journal.suspended) return
      const file = join(dir, journalName(g.journalGeneration))
      await closeFd(journal.descriptor).catch(() => {})
      await truncate(file, journal.size).catch((error: unknown) => {
        if (!(error as NodeJS.ErrnoException).code?.includes('ENOENT')) throw error
      })
      if (durable) {
        const fd = await openFd(file, 'r+')
        try {
          await fsync(fd)
        } finally {
          await closeFd(fd)
        }
      }
      if (probe) {
        await step('disk.probe')
        await probeDisk(dir, durable)
      }
      const again = await recover(dir, durable, dsync, policy)
      g.state = again.state
      g.generation = again.generation
      g.journalGeneration = again.journalGeneration
      g.snapshotBytes = again.snapshotBytes
      journal.resume(again.fd, again.journalBytes)
      fault = null
      log(`fileStore: ${dir}: writes resumed`)
    } catch (error) {
      log(`fileStore: ${dir}: still failing, retrying in 1 s: ${(error as Error).message}`)
      retry = setTimeout(() => void heal(probe), 1000)
      retry.unref()
    } finally {
      healing = false
    }
  }

  const journal: Journal = new Journal(recovered.fd, recovered.journalBytes, {
    sync,
    // Before each flush: make sure no other process took the directory over (a stall past the
    // lock's heartbeat), then the test hook.
    beforeWrite: () => {
      lock.check()
      return step('journal.write')
    },
    ...(hook ? { beforeSync: () => step('journal.sync') } : {}),
    wantsMaintenance: () =>
      background === null &&
      closing === null &&
      (requested !== null ||
        (performance.now() >= compactAfter &&
          (journal.size > Math.max(minBytes, ratio * g.snapshotBytes) ||
            deletesDue() ||
            // A compaction was cut short (a crash, a failure): finish the job, so reopens read less.
            g.generation < g.journalGeneration))),
    maintain: async () => {
      const asked = requested
      requested = null
      opsSince = 0
      deletesSince = 0
      const failed = (error: unknown) => {
        asked?.reject(diskError(error))
        compactAfter = performance.now() + 10_000
        log(
          `fileStore: ${dir}: compaction failed, going on in generation ${g.generation}: ${(error as Error)?.message ?? String(error)}`,
        )
      }
      let job: Awaited<ReturnType<typeof beginCompaction>>
      try {
        job = await beginCompaction(g, hold)
      } catch (error) {
        failed(error)
        return
      }
      // The snapshot is written beside the calls; flushes go on into the new journal meanwhile.
      const stop = () =>
        closing
          ? new StoreError('closed', `fileStore: the store at ${dir} is closed`)
          : (journal.failure ?? journal.suspended)
      background = writeSnapshotJob(g, job, stop)
        .then(
          () => asked?.resolve(DURABLE),
          (error: unknown) => {
            if (error instanceof StoreError && error.code === 'closed') asked?.reject(error)
            else if (error === journal.suspended || error === journal.failure) asked?.reject(error as Error)
            else failed(error)
          },
        )
        .finally(() => {
          background = null
          if (!closing) journal.kick()
        })
    },
    onFailure: (error) => {
      requested?.reject(error)
      requested = null
    },
    onFault: (error, cause) => {
      fault = error
      requested?.reject(error)
      requested = null
      log(
        `fileStore: ${dir}: a write failed, refusing writes until the disk takes them again: ${String((cause as Error)?.message ?? cause)}`,
      )
      void heal(true)
    },
    code: diskError,
    fatal: (cause) => cause instanceof StoreError && cause.code === 'locked',
  })
  g.journal = journal
  // A compaction cut short left more than one journal: finish it beside the calls.
  if (g.generation < g.journalGeneration) journal.kick()

  const use = (): MemoryState => {
    if (closing) throw new StoreError('closed', `fileStore: the store at ${dir} is closed`)
    if (journal.failure) throw journal.failure
    return g.state
  }
  /** The state, for a write: refused while the store heals. */
  const writable = (): MemoryState => {
    const s = use()
    if (fault) throw fault
    return s
  }
  /** Applies ops already checked, and resolves once their record is durable. */
  const commit = (s: MemoryState, ops: Op[]): Promise<WriteResult> => {
    const json = recordPayload(ops)
    opsSince += ops.length
    for (const op of ops) if (removesData(s, op)) deletesSince++
    try {
      // Apply a copy equal to what the journal will replay, so memory and a reopened store agree.
      for (const op of ops) s.apply(cloneJson(op))
    } catch (error) {
      // A malformed op threw halfway: memory no longer matches the journal; rebuild it from disk.
      journal.stop(error)
      throw error
    }
    return journal.append(json)
  }

  return {
    persistent: true,
    // Not `async`: a durable write returns the promise its whole flush shares.
    write: function write(batch): Promise<WriteResult> {
      // A compaction is copying the state: wait (a few ms per million records), in call order.
      if (held) return held.then(() => write(batch))
      try {
        const s = writable()
        const failed = s.failedCheck(batch.checks ?? [])
        if (failed) return journal.barrier().then(() => ({ ok: false, failed }))
        return batch.ops.length ? commit(s, batch.ops) : journal.barrier()
      } catch (error) {
        return Promise.reject(error)
      }
    },
    ...modelReads(use),
    compact: async () => {
      writable()
      requested ??= new Group()
      const done = requested.promise
      journal.kick()
      await done
    },
    stats: () => ({
      generation: g.generation,
      journalGeneration: g.journalGeneration,
      journalBytes: journal.size,
      snapshotBytes: g.snapshotBytes,
      syncs: journal.syncs,
      flushes: journal.flushes,
      records: journal.records,
      compactions: g.compactions,
      compactionHoldMs: g.holdMs,
      compactionMs: g.compactionMs,
      recoveredRecords: recovered.records,
      truncatedBytes: recovered.truncatedBytes,
      healthy: fault === null && journal.failure === null,
    }),
    close: () =>
      (closing ??= (async () => {
        clearTimeout(retry)
        await journal.idle()
        // A compaction writing its snapshot stops at its next slice (its temp file removed).
        await background
        // A compaction asked for and not begun never will be.
        requested?.reject(new StoreError('closed', `fileStore: the store at ${dir} is closed`))
        requested = null
        try {
          await closeFd(journal.descriptor)
        } finally {
          await lock.release()
        }
      })()),
  }
}

/** Removes what a crash can leave in a store directory: compaction temp files, probe files, lock temp files. */
async function removeLeftovers(dir: string): Promise<void> {
  let removed = false
  for (const name of await readdir(dir)) {
    const leftover =
      parseName(name)?.kind === 'temp' ||
      name === PROBE_FILE ||
      (name.startsWith(`${LOCK_FILE}.`) && name.endsWith('.tmp'))
    if (leftover) {
      await unlink(join(dir, name)).catch(() => {})
      removed = true
    }
  }
  if (removed) await syncDirectory(dir).catch(() => {})
}
