import { readdir, rename, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import type { MemoryState, RecordSlice } from '../../src/store/memory-state.js'
import { journalName, parseName, snapshotName, snapshotTempName } from './files.js'
import { closeFd, fsync, journalFlags, openFd, syncDirectory } from './io.js'
import type { Journal } from './journal.js'
import type { FileStoreStep } from './options.js'
import { type Slicer, slicer, writeSnapshot } from './snapshot.js'

/** What compaction reads and advances: the directory's generations and their sizes. */
export interface Generation {
  dir: string
  durable: boolean
  /** Open journals with `O_DSYNC`. */
  dsync: boolean
  state: MemoryState
  journal: Journal
  /** The newest snapshot's generation (0: none yet). */
  generation: number
  /** The generation of the journal appended to: `generation`, or more while a compaction runs. */
  journalGeneration: number
  snapshotBytes: number
  compactions: number
  /** The last compaction's write hold and whole duration (ms). */
  holdMs: number
  compactionMs: number
  step: (step: FileStoreStep) => void | Promise<void>
}

/** Records per slice of the view, and per frame of the snapshot file. */
const SLICE_RECORDS = 128
/** The snapshot is synced as it is written, every this many bytes (see `writeSnapshot`). */
const SYNC_EVERY_BYTES = 32 * 1024 * 1024
/** Longest run of compaction work between two turns of the event loop (ms). */
const SLICE_BUDGET_MS = 2

/** A compaction under way: the view of the state it writes, and the journal bytes that view holds. */
export interface SnapshotJob {
  generation: number
  view: RecordSlice[]
  /** Bytes at the start of the new journal whose ops the view already holds. */
  journalBytes: number
  /** When it began (`performance.now()`). */
  started: number
}

/**
 * Starts a compaction to generation N+1 (N: the journal generation). Runs inside the journal's
 * flush loop, between flushes, so no flush overlaps it; it blocks no call for long:
 *
 * 1. Create the empty `journal.N+1.log` and fsync the directory (calls go on meanwhile).
 * 2. `hold` writes (reads go on), point the journal at the new file — the records queued and not
 *    yet flushed go there, the first `journalBytes` of it — and copy the state's records into a
 *    view, a slice at a time with turns of the event loop between slices (records are replaced,
 *    never changed, by later ops; open transactions, whose `writes` and `locks` staging appends to,
 *    are copied). Then release the writes: they go on into the new journal.
 *
 * A crash from here on leaves snapshot N, `journal.N.log` and `journal.N+1.log`: a reopen replays
 * them in order. `writeSnapshotJob` then writes the view beside the calls.
 */
export async function beginCompaction(g: Generation, hold: () => () => void): Promise<SnapshotJob> {
  const started = performance.now()
  const next = g.journalGeneration + 1
  await g.step('journal.create')
  const file = join(g.dir, journalName(next))
  const fd = await openFd(file, journalFlags(g.dsync, true))
  try {
    if (g.durable) await syncDirectory(g.dir)
  } catch (error) {
    await closeFd(fd).catch(() => {})
    await unlink(file).catch(() => {})
    throw error
  }
  const release = hold()
  const held = performance.now()
  let old: number
  let view: RecordSlice[]
  let journalBytes: number
  try {
    journalBytes = g.journal.pendingBytes
    old = g.journal.switchTo(fd)
    g.journalGeneration = next
    view = await captureView(g.state, slicer(SLICE_BUDGET_MS))
  } finally {
    release()
    g.holdMs = performance.now() - held
  }
  await closeFd(old).catch(() => {})
  return { generation: next, view, journalBytes, started }
}

/**
 * Copies the records of `state` into slices, pausing between slices. No op may apply until it
 * resolves. Open transactions are copied (staging appends to their lists in place).
 */
export async function captureView(state: MemoryState, slices: Slicer): Promise<RecordSlice[]> {
  const view: RecordSlice[] = []
  for (const slice of state.recordSlices(SLICE_RECORDS)) {
    if (slice.kind === 'transactions') {
      slice.records = slice.records.map((t) =>
        t.state === 'open' ? { ...t, writes: [...t.writes], locks: [...t.locks] } : t,
      )
    }
    view.push(slice)
    await slices.pause()
  }
  return view
}

/**
 * Finishes a compaction begun by `beginCompaction`, beside the calls:
 *
 * 3. Write `snapshot.N+1.json.tmp` from the view, a frame at a time between turns of the event loop,
 *    and fsync it; wait until the journal bytes it holds are durable in `journal.N+1.log`.
 * 4. Rename it to `snapshot.N+1.json` and fsync the directory. From here a reopen starts there.
 * 5. Remove the files of older generations; a crash before that leaves them for the next open.
 *
 * `stop` is asked between slices: when it answers an error (the store is closing, or healing from a
 * failed flush), the compaction stops with it. On any failure the temp file is removed, and the
 * store goes on as it was (its files still hold every write: snapshot N and the journals since).
 */
export async function writeSnapshotJob(
  g: Generation,
  job: SnapshotJob,
  stop: () => Error | null,
): Promise<void> {
  const { generation: next } = job
  const temp = join(g.dir, snapshotTempName(next))
  const check = () => {
    const error = stop()
    if (error) throw error
  }
  let renamed = false
  try {
    await g.step('snapshot.write')
    const fd = await openFd(temp, 'w')
    let bytes: number
    try {
      bytes = await writeSnapshot(
        fd,
        job.view,
        next,
        job.journalBytes,
        slicer(SLICE_BUDGET_MS, check),
        g.durable ? SYNC_EVERY_BYTES : 0,
      )
      job.view = []
      await g.step('snapshot.sync')
      if (g.durable) await fsync(fd)
    } finally {
      await closeFd(fd)
    }
    // The snapshot stands for the journal's first bytes: they must be there before it is.
    if (g.journal.size < job.journalBytes) await g.journal.barrier()
    check()
    if (g.journal.size < job.journalBytes)
      throw new Error('the records queued when compaction began are not durable')
    await g.step('snapshot.rename')
    await rename(temp, join(g.dir, snapshotName(next)))
    renamed = true
    g.generation = next
    g.snapshotBytes = bytes
    await g.step('directory.sync')
    if (g.durable) await syncDirectory(g.dir)
    await g.step('cleanup')
    let removed = false
    for (const name of await readdir(g.dir)) {
      const parsed = parseName(name)
      if (parsed && parsed.kind !== 'temp' && parsed.generation < next) {
        await unlink(join(g.dir, name)).catch(() => {})
        removed = true
      }
    }
    if (removed && g.durable) await syncDirectory(g.dir).catch(() => {})
    g.compactions++
    g.compactionMs = performance.now() - job.started
  } catch (error) {
    job.view = []
    if (!renamed) await unlink(temp).catch(() => {})
    throw error
  }
}
