import { readdir, stat, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { MemoryState } from '../../src/store/memory-state.js'
import type { LegacyOp, Op } from '../../src/types.js'
import { journalName, parseName, snapshotName } from './files.js'
import { closeFd, fsync, ftruncate, journalFlags, openFd, syncDirectory } from './io.js'
import type { RecoveryProgress } from './options.js'
import { RECORD_HEADER_BYTES, recordOps, scanJournal } from './record.js'
import { readSnapshot } from './snapshot.js'

/** A store directory read back: the state, and the open journal to append to. */
export interface Recovered {
  state: MemoryState
  /** The newest snapshot's generation (0: none). */
  generation: number
  /** The last journal's generation: `generation`, or more after a compaction that was cut short. */
  journalGeneration: number
  /** Descriptor of `journal.<journalGeneration>.log`, open for writing at `journalBytes`. */
  fd: number
  journalBytes: number
  snapshotBytes: number
  /** Records replayed from the journal, and bytes of torn tail cut off it. */
  records: number
  truncatedBytes: number
}

/** What to do about a journal whose tail is not a whole, valid record. */
export interface TailPolicy {
  /** `truncate` (default): cut it off and log it; `refuse`: do not open. */
  onTornTail?: 'truncate' | 'refuse'
  /** Where the cut is reported (default: stderr). */
  log?: (line: string) => void
}

/**
 * Describes the bad tail of a journal: how many record frames it seems to hold (by their length
 * fields) and whether its first frame is whole but fails its checksum (damage, not a torn append).
 */
function describeTail(data: Buffer, from: number): { frames: number; corrupt: boolean } {
  let frames = 0
  let corrupt = false
  let at = from
  while (at < data.length) {
    frames++
    if (at + RECORD_HEADER_BYTES > data.length) break
    const length = data.readUInt32LE(at)
    const end = at + RECORD_HEADER_BYTES + length
    // Zeros (space the file system allocated but the crash never filled) or a frame cut short.
    if (length < 2 || end > data.length) break
    if (frames === 1) corrupt = true
    at = end
  }
  return { frames, corrupt }
}

/**
 * Opens the newest generation in `dir`: streams in its snapshot (if any), replays the journals from
 * that generation on, in order (more than one when a compaction was cut short: its snapshot never
 * landed, and writes had gone on into the next journal), cuts a torn tail off the last journal (as
 * `policy` says), and removes files of older generations and of crashed compactions. The last
 * journal is left open for appending (with `O_DSYNC` when `dsync`). Throws an Error naming the file
 * (and byte offset) when a file is damaged in a way that a crash cannot explain, rather than open a
 * store that has lost acknowledged writes. `progress` is told how far it has read, now and then.
 */
export async function recover(
  dir: string,
  durable: boolean,
  dsync: boolean,
  policy: TailPolicy = {},
  progress?: (p: RecoveryProgress) => void,
): Promise<Recovered> {
  const entries = (await readdir(dir)).map((name) => ({ name, parsed: parseName(name) }))
  const snapshots = entries.filter((e) => e.parsed?.kind === 'snapshot').map((e) => e.parsed!.generation)
  const generation = snapshots.length ? Math.max(...snapshots) : 0
  const journals = entries
    .filter((e) => e.parsed?.kind === 'journal' && e.parsed.generation >= generation)
    .map((e) => e.parsed!.generation)
    .sort((a, b) => a - b)
  let last = journals.length ? journals[journals.length - 1]! : generation
  for (let g = generation; g <= last; g++) {
    if (!journals.includes(g) && last > generation) {
      throw new Error(
        `fileStore: ${join(dir, journalName(last))} follows the newest snapshot (generation ${generation}) ` +
          `but ${journalName(g)} is missing; the directory is not one the file store left behind, so the store was not opened`,
      )
    }
  }
  const stale = entries
    .filter(({ parsed }) => parsed && (parsed.kind === 'temp' || parsed.generation < generation))
    .map((e) => e.name)

  const sizes = new Map<number, number>()
  let totalBytes = 0
  const snapshotFile = join(dir, snapshotName(generation))
  if (snapshots.length) totalBytes += (await stat(snapshotFile)).size
  for (const g of journals) {
    const size = (await stat(join(dir, journalName(g)))).size
    sizes.set(g, size)
    totalBytes += size
  }
  // Empty journals after the newest snapshot's (a compaction that stopped before writing there):
  // nothing to replay; remove them and append where the data ends.
  while (last > generation && sizes.get(last) === 0) {
    stale.push(journalName(last))
    journals.pop()
    last--
  }
  let done = 0
  let told = -Infinity
  const tell = progress
    ? (bytesRead: number) => {
        // A few times a second at most.
        if (performance.now() - told < 100) return
        told = performance.now()
        progress({ bytesRead: Math.min(totalBytes, done + bytesRead), totalBytes })
      }
    : undefined

  let state = new MemoryState()
  let snapshotBytes = 0
  let skip = 0
  if (snapshots.length) {
    const loaded = await readSnapshot(snapshotFile, generation, tell)
    state = loaded.state
    snapshotBytes = loaded.bytes
    skip = loaded.journalBytes
    done += loaded.bytes
  }

  const replay = (json: string) => {
    const { ops, legacy } = recordOps<Op | LegacyOp>(json)
    if (legacy) for (const op of ops) state.applyLegacy(op)
    else for (const op of ops) state.apply(op)
  }
  let records = 0
  // Journals before the last one were complete when the next began: read them whole.
  for (let g = generation; g < last; g++) {
    const file = join(dir, journalName(g))
    const size = sizes.get(g) ?? 0
    const fd = await openFd(file, 'r')
    try {
      const scan = await scanJournal(fd, size, file, g === generation ? skip : 0, replay, tell)
      if (scan.tornBytes > 0 || scan.validBytes < (g === generation ? skip : 0)) {
        throw new Error(
          `fileStore: ${file}: ${scan.tornBytes} bytes at byte offset ${scan.validBytes} are not whole, valid records, ` +
            `but a later journal follows it; the directory is damaged, so the store was not opened`,
        )
      }
      records += scan.records
    } finally {
      await closeFd(fd)
    }
    done += size
  }

  const journalFile = join(dir, journalName(last))
  const created = !journals.includes(last)
  const fd = await openFd(journalFile, journalFlags(dsync, false))
  try {
    const scan = await scanJournal(
      fd,
      sizes.get(last) ?? 0,
      journalFile,
      last === generation ? skip : 0,
      replay,
      tell,
    )
    records += scan.records
    if (scan.validBytes < (last === generation ? skip : 0)) {
      throw new Error(
        `fileStore: ${journalFile}: the snapshot holds its first ${skip} bytes, but only ${scan.validBytes} are whole, valid records; ` +
          'the directory is damaged, so the store was not opened',
      )
    }
    if (scan.tornBytes > 0) {
      const { frames, corrupt } = describeTail(scan.tail, 0)
      const what =
        `${journalFile}: ${scan.tornBytes} bytes at byte offset ${scan.validBytes} are not whole, valid records ` +
        `(${frames} record frame${frames === 1 ? '' : 's'}; ${corrupt ? 'a whole record fails its checksum: damage' : 'cut short: a crash during an append, or a truncated file'})`
      if (policy.onTornTail === 'refuse') {
        throw new Error(
          `fileStore: ${what}; not opened (onTornTail: 'refuse'). Open with onTornTail: 'truncate' to drop them`,
        )
      }
      ;(policy.log ?? ((line: string) => process.stderr.write(`${line}\n`)))(
        `fileStore: WARNING: dropped ${frames} unreadable record${frames === 1 ? '' : 's'} from the end of ${what}`,
      )
      await ftruncate(fd, scan.validBytes)
      if (durable) await fsync(fd)
    }
    progress?.({ bytesRead: totalBytes, totalBytes })
    for (const name of stale) await unlink(join(dir, name)).catch(() => {})
    if (durable && (created || stale.length > 0)) await syncDirectory(dir)
    return {
      state,
      generation,
      fd,
      journalGeneration: last,
      journalBytes: scan.validBytes,
      snapshotBytes,
      records,
      truncatedBytes: scan.tornBytes,
    }
  } catch (error) {
    await closeFd(fd)
    throw error
  }
}
