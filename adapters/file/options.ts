import type { Store } from '../../src/store/contract.js'

/** `fsync`: a write is acknowledged once its record is on disk. `none`: never sync (tests, benchmarks). */
export type Durability = 'fsync' | 'none'

/**
 * How a journal flush reaches the disk with `durability: 'fsync'`: `fdatasync` after the write, or
 * `dsync`, a journal opened with `O_DSYNC` so that the write itself returns once durable (the same
 * guarantee with one system call instead of two, which is faster for a lone writer).
 */
export type SyncMethod = 'fdatasync' | 'dsync'

/**
 * Points at which the store calls `FileStoreHooks.step`, each just before doing it: the journal's
 * `write` and `fdatasync` of a flush, then the steps of a compaction in order, and the probe write
 * a store healing from a failed write makes before it takes writes again.
 */
export type FileStoreStep =
  | 'journal.write'
  | 'journal.sync'
  | 'snapshot.write'
  | 'snapshot.sync'
  | 'snapshot.rename'
  | 'directory.sync'
  | 'journal.create'
  | 'cleanup'
  | 'disk.probe'

/** The compaction steps, in the order they run. */
export const COMPACTION_STEPS: readonly FileStoreStep[] = [
  'journal.create',
  'snapshot.write',
  'snapshot.sync',
  'snapshot.rename',
  'directory.sync',
  'cleanup',
]

/** How far opening a store has read: bytes of snapshot and journals read so far, of `totalBytes`. */
export interface RecoveryProgress {
  bytesRead: number
  totalBytes: number
}

/**
 * Fault injection for tests: a hook that throws acts as an I/O error at that step (the store then
 * refuses writes and heals, as after a full disk); reopening the directory afterwards shows what a
 * crash at that step would have left.
 */
export interface FileStoreHooks {
  step?: (step: FileStoreStep) => void | Promise<void>
}

/** Options of `fileStore`. */
export interface FileStoreOptions {
  /** The store's directory; created if missing. One store (one process) may have it open at a time. */
  path: string
  /** Default `fsync`. */
  durability?: Durability
  /** Default `fdatasync`. */
  sync?: SyncMethod
  /**
   * Compact when the journal exceeds this many times the snapshot's bytes (default 2: each byte
   * written is rewritten about 1.5 times, and a reopen reads at most 3 times the snapshot)...
   */
  compactRatio?: number
  /** ...and exceeds this many bytes (default 4 MiB). */
  compactMinBytes?: number
  /**
   * Compacts also once the deletes journaled since the last compaction (deleted and purged tokens,
   * transactions, sessions…, and cards rewritten without their cvc) amount to this share of the ops journaled since, and the journal holds
   * at least 1 MiB (or `compactMinBytes`, if smaller): deleted data then leaves the disk.
   * @default 0.25
   */
  compactDeleteShare?: number
  /**
   * A lock held by a process this one can't check by pid (another container, PID namespace or
   * host) counts as stale once its heartbeat is this old.
   * @default 10000
   */
  lockStaleMs?: number
  /**
   * A journal whose end is not whole, valid records (a crash during an append, a truncated file, a
   * damaged last record): `truncate` cuts it off and logs how many records at which offset;
   * `refuse` does not open the store.
   * @default 'truncate'
   */
  onTornTail?: 'truncate' | 'refuse'
  /** Where warnings go (a cut tail, a failed write or compaction, writes resumed). Default: stderr. */
  log?: (line: string) => void
  /**
   * Told now and then while the store opens how far it has read its files (several times a second
   * at most; the CLI prints it as a `recovering: 40 %` line once opening takes over a second).
   */
  onRecoveryProgress?: (progress: RecoveryProgress) => void
  hooks?: FileStoreHooks
}

/** Counters of a file store, for tests, tools and benchmarks. */
export interface FileStoreStats {
  /**
   * The newest snapshot's generation: `snapshot.<generation>.json` (none for 0) with
   * `journal.<generation>.log` and any later journals replayed on top.
   */
  generation: number
  /**
   * The journal appended to, `journal.<journalGeneration>.log`: `generation`, or the next one while
   * a compaction writes its snapshot (or after one failed or was cut short by a crash).
   */
  journalGeneration: number
  journalBytes: number
  snapshotBytes: number
  /** Journal flushes made durable since open (one `fdatasync` or `O_DSYNC` write each). */
  syncs: number
  /** Journal flushes since open, and the records they wrote. */
  flushes: number
  records: number
  compactions: number
  /**
   * How long the last compaction held writes back while it copied the state's records (ms; reads
   * went on meanwhile), and how long it took in all, to its snapshot in place (ms). 0 before one.
   */
  compactionHoldMs: number
  compactionMs: number
  /** Records replayed from the journal on open, and bytes of torn tail cut off it. */
  recoveredRecords: number
  truncatedBytes: number
  /** False while writes are refused after a failed write or compaction (the store heals by itself). */
  healthy: boolean
}

/** A `Store` kept in one directory, with its counters and an explicit compaction. */
export interface FileStore extends Store {
  stats(): FileStoreStats
  /** Writes a snapshot of the current state and starts a new, empty journal. */
  compact(): Promise<void>
}
