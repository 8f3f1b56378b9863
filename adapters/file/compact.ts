import { rename, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import type { MemoryState } from '../../src/store/memory-state.js'
import { journalName, snapshotName, snapshotTempName } from './files.js'
import { closeFd, fsync, journalFlags, openFd, syncDirectory, writeAll } from './io.js'
import { DURABLE, type Journal } from './journal.js'
import type { FileStoreStep } from './options.js'
import { encodeSnapshot } from './snapshot.js'

/** What compaction reads and advances: the directory's current generation and its sizes. */
export interface Generation {
  dir: string
  durable: boolean
  /** Open journals with `O_DSYNC`. */
  dsync: boolean
  state: MemoryState
  journal: Journal
  generation: number
  snapshotBytes: number
  compactions: number
  step: (step: FileStoreStep) => void | Promise<void>
  /** The error the writers of pending records get when a compaction fails before its snapshot is durable. */
  code: (cause: unknown) => Error
}

/**
 * Moves the store to generation N+1. Runs inside the journal's flush loop, so no flush overlaps it.
 *
 * 1. Synchronously: take the records queued since the last flush out of the journal and serialise
 *    the state, which already holds their ops (the new snapshot covers them; they must not also be
 *    replayed on top of it, since `transaction.stage` is not idempotent). This is the one step that
 *    blocks every call: one `JSON.stringify` of `state.records()`, about 0.15 s per 100k tokens.
 * 2. Write `snapshot.N+1.json.tmp`, fsync it, rename it to `snapshot.N+1.json`, fsync the directory.
 *    From here a reopen picks generation N+1; before, it picks N (and removes the temp file).
 * 3. Create the empty `journal.N+1.log`, point the journal at it, fsync the directory.
 * 4. Remove generation N's files; a crash before that leaves them for the next open to remove.
 *
 * The writers of the records taken in step 1 are answered when step 4 is done, or rejected.
 *
 * On failure it removes its temp file and throws a `CompactionError` saying whether the new
 * snapshot reached the disk (then those writers are answered: the snapshot holds them) and whether
 * it took records out of the journal (then memory holds writes no file does, and the store must
 * rebuild it from disk). With neither, the store goes on in generation N as if nothing happened.
 */
export async function compact(g: Generation): Promise<void> {
  const next = g.generation + 1
  const covered = g.journal.detachPending()
  const temp = join(g.dir, snapshotTempName(next))
  let renamed = false
  let durable = false
  try {
    const bytes = encodeSnapshot(g.state, next)
    await g.step('snapshot.write')
    const fd = await openFd(temp, 'w')
    try {
      await writeAll(fd, bytes, 0)
      await g.step('snapshot.sync')
      if (g.durable) await fsync(fd)
    } finally {
      await closeFd(fd)
    }
    await g.step('snapshot.rename')
    await rename(temp, join(g.dir, snapshotName(next)))
    renamed = true
    await g.step('directory.sync')
    if (g.durable) await syncDirectory(g.dir)
    durable = true
    const previous = g.generation
    g.generation = next
    g.snapshotBytes = bytes.length
    await g.step('journal.create')
    const old = g.journal.switchTo(await openFd(join(g.dir, journalName(next)), journalFlags(g.dsync, true)))
    await closeFd(old)
    if (g.durable) await syncDirectory(g.dir)
    await g.step('cleanup')
    for (const name of [snapshotName(previous), journalName(previous)]) {
      await unlink(join(g.dir, name)).catch(() => {})
    }
    g.compactions++
    covered?.resolve(DURABLE)
  } catch (error) {
    if (!renamed) await unlink(temp).catch(() => {})
    const cause = error instanceof Error ? error : new Error(String(error))
    if (durable) covered?.resolve(DURABLE)
    else covered?.reject(g.code(cause))
    throw new CompactionError(cause, renamed, covered !== null)
  }
}

/** A compaction that failed: its cause, whether the new snapshot is in place, whether it held pending records. */
export class CompactionError extends Error {
  constructor(
    override readonly cause: Error,
    /** `snapshot.N+1.json` was renamed into place: a reopen (or rebuild) starts from it. */
    readonly renamed: boolean,
    /** Records were taken out of the journal for the snapshot: memory is ahead of the disk. */
    readonly tookPending: boolean,
  ) {
    super(cause.message, { cause })
    this.name = 'CompactionError'
  }

  /** Whether memory may no longer match the newest generation on disk (the store must rebuild). */
  get diverged(): boolean {
    return this.renamed || this.tookPending
  }
}
