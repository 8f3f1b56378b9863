import { readdir, readFile, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { MemoryState } from '../../src/store/memory-state.js'
import type { Op } from '../../src/types.js'
import { journalName, parseName, snapshotName } from './files.js'
import { closeFd, fsync, ftruncate, journalFlags, openFd, syncDirectory } from './io.js'
import { RECORD_HEADER_BYTES, scanJournal } from './record.js'
import { restoreSnapshot } from './snapshot.js'

/** A store directory read back: the state, and the open journal to append to. */
export interface Recovered {
  state: MemoryState
  generation: number
  /** Descriptor of `journal.<generation>.log`, open for writing at `journalBytes`. */
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
 * Opens the newest generation in `dir` (its journal with `O_DSYNC` when `dsync`): restores its snapshot (if any), replays its journal,
 * cuts a torn tail off the journal, and removes files of older generations and of crashed
 * compactions. Throws an Error naming the file (and byte offset) when a file is damaged in a way
 * that a crash cannot explain, rather than open a store that has lost acknowledged writes.
 */
export async function recover(
  dir: string,
  durable: boolean,
  dsync: boolean,
  policy: TailPolicy = {},
): Promise<Recovered> {
  const entries = (await readdir(dir)).map((name) => ({ name, parsed: parseName(name) }))
  const snapshots = entries.filter((e) => e.parsed?.kind === 'snapshot').map((e) => e.parsed!.generation)
  const generation = snapshots.length ? Math.max(...snapshots) : 0
  const stale: string[] = []
  for (const { name, parsed } of entries) {
    if (!parsed) continue
    if (parsed.kind === 'temp' || parsed.generation < generation) stale.push(name)
    else if (parsed.kind === 'journal' && parsed.generation > generation) {
      const size = (await readFile(join(dir, name))).length
      if (size > 0) {
        throw new Error(
          `fileStore: ${join(dir, name)} is newer than the newest snapshot (generation ${generation}); ` +
            'the directory is not one the file store left behind, so the store was not opened',
        )
      }
      stale.push(name)
    }
  }

  let state = new MemoryState()
  let snapshotBytes = 0
  if (snapshots.length) {
    const file = join(dir, snapshotName(generation))
    const data = await readFile(file)
    state = restoreSnapshot(data, file, generation)
    snapshotBytes = data.length
  }

  const journalFile = join(dir, journalName(generation))
  const created = !entries.some((e) => e.name === journalName(generation))
  const fd = await openFd(journalFile, journalFlags(dsync, false))
  try {
    const data = created ? Buffer.alloc(0) : await readFile(journalFile)
    const scan = scanJournal(data, journalFile, (json) => {
      for (const op of JSON.parse(json) as Op[]) state.apply(op)
    })
    if (scan.tornBytes > 0) {
      const { frames, corrupt } = describeTail(data, scan.validBytes)
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
    for (const name of stale) await unlink(join(dir, name)).catch(() => {})
    if (durable && (created || stale.length > 0)) await syncDirectory(dir)
    return {
      state,
      generation,
      fd,
      journalBytes: scan.validBytes,
      snapshotBytes,
      records: scan.records,
      truncatedBytes: scan.tornBytes,
    }
  } catch (error) {
    await closeFd(fd)
    throw error
  }
}
