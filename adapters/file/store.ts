import { chmod, mkdir } from 'node:fs/promises'
import { dirname, resolve } from 'node:path'
import type { WriteResult } from '../../src/store/contract.js'
import { StoreError } from '../../src/store/error.js'
import type { MemoryState } from '../../src/store/memory-state.js'
import type { Op } from '../../src/types.js'
import { cloneJson } from './clone.js'
import { compact, type Generation } from './compact.js'
import { closeFd, DIRECTORY_MODE, syncDirectory } from './io.js'
import { DURABLE, Group, Journal } from './journal.js'
import { lockDirectory } from './lock.js'
import type { FileStore, FileStoreOptions, FileStoreStep } from './options.js'
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
 * - When a write or sync fails, the pending writes are rejected and so is every later call: memory
 *   then holds changes the disk may not. Reopen the directory to go on.
 * - Compaction (once the journal outgrows `compactRatio` × the snapshot and `compactMinBytes`)
 *   serialises the whole state at once, so calls wait for that step (about 0.15 s per 100k tokens),
 *   then writes a snapshot and starts a new journal; acknowledged writes survive a crash at any step.
 * - One writer: the directory is locked (its `LOCK` file holds the pid) until `close()`, which
 *   waits for pending writes. A second open, in this process or another live one, fails at once.
 *
 * On disk is only what the core hands the store (keys and nonces are SHA-256 hashes already).
 */
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
  const lock = await lockDirectory(dir)
  let recovered: Awaited<ReturnType<typeof recover>>
  try {
    recovered = await recover(dir, durable, dsync)
  } catch (error) {
    await lock.release()
    throw error
  }
  const state = recovered.state

  let requested: Group | null = null
  const g: Generation = {
    dir,
    durable,
    dsync,
    state,
    journal: undefined as unknown as Journal,
    generation: recovered.generation,
    snapshotBytes: recovered.snapshotBytes,
    compactions: 0,
    step,
  }
  const journal: Journal = new Journal(recovered.fd, recovered.journalBytes, {
    sync,
    ...(hook ? { beforeWrite: () => step('journal.write'), beforeSync: () => step('journal.sync') } : {}),
    wantsMaintenance: () =>
      requested !== null || journal.size > Math.max(minBytes, ratio * g.snapshotBytes) || deletesDue(),
    maintain: async () => {
      const asked = requested
      requested = null
      opsSince = 0
      deletesSince = 0
      try {
        await compact(g)
        asked?.resolve(DURABLE)
      } catch (error) {
        asked?.reject(error instanceof Error ? error : new Error(String(error)))
        throw error
      }
    },
    onFailure: (error) => {
      requested?.reject(error)
      requested = null
    },
  })
  g.journal = journal

  let closing: Promise<void> | null = null
  const use = (): MemoryState => {
    if (closing) throw new StoreError('closed', `fileStore: the store at ${dir} is closed`)
    if (journal.failure) throw journal.failure
    return state
  }
  /** Applies ops already checked, and resolves once their record is durable. */
  const commit = (s: MemoryState, ops: Op[]): Promise<WriteResult> => {
    const json = JSON.stringify(ops)
    opsSince += ops.length
    for (const op of ops) if (op.op.endsWith('.delete')) deletesSince++
    try {
      // Apply a copy equal to what the journal will replay, so memory and a reopened store agree.
      for (const op of ops) s.apply(cloneJson(op))
    } catch (error) {
      // A malformed op threw halfway: memory no longer matches the journal, so stop here.
      journal.fail(error)
      throw journal.failure
    }
    return journal.append(json)
  }

  return {
    persistent: true,
    // Not `async`: a durable write returns the promise its whole flush shares.
    write: (batch) => {
      try {
        const s = use()
        const failed = s.failedCheck(batch.checks ?? [])
        if (failed) return journal.barrier().then(() => ({ ok: false, failed }))
        return batch.ops.length ? commit(s, batch.ops) : journal.barrier()
      } catch (error) {
        return Promise.reject(error)
      }
    },
    getTenant: async (id) => use().getTenant(id),
    hasTenants: async () => use().hasTenants(),
    listTenants: async () => use().listTenants(),
    findKey: async (hash) => use().findKey(hash),
    getApplication: async (t, id) => use().getApplication(t, id),
    listApplications: async (t, range) => use().listApplications(t, range),
    getToken: async (t, id) => use().getToken(t, id),
    hasAssociation: async (t, p, c) => use().hasAssociation(t, p, c),
    listChildren: async (t, p, q) => use().listChildren(t, p, q),
    getTransaction: async (t, id) => use().getTransaction(t, id),
    getSessionByNonce: async (t, hash) => use().getSessionByNonce(t, hash),
    getFormula: async (t, id) => use().getFormula(t, id),
    listFormulas: async (t, q) => use().listFormulas(t, q),
    getReactor: async (t, id) => use().getReactor(t, id),
    listReactors: async (t, q) => use().listReactors(t, q),
    getIdempotency: async (t, id) => use().getIdempotency(t, id),
    listExpired: async (query) => use().listExpired(query),
    dump: async () => use().dump(),
    compact: async () => {
      use()
      requested ??= new Group()
      const done = requested.promise
      journal.kick()
      await done
    },
    stats: () => ({
      generation: g.generation,
      journalBytes: journal.size,
      snapshotBytes: g.snapshotBytes,
      syncs: journal.syncs,
      flushes: journal.flushes,
      records: journal.records,
      compactions: g.compactions,
      recoveredRecords: recovered.records,
      truncatedBytes: recovered.truncatedBytes,
    }),
    close: () =>
      (closing ??= (async () => {
        await journal.idle()
        try {
          await closeFd(journal.descriptor)
        } finally {
          await lock.release()
        }
      })()),
  }
}
