import type { Store } from '../../src/store/index.js'

/** `fsync`: a write is acknowledged once its LMDB commit is on disk (audit entries only: in the file). `none`: never sync (tests, benchmarks). */
export type Durability = 'fsync' | 'none'

/** Options of `fileStore`. */
export interface FileStoreOptions {
  /** The store's directory; created (0700) if missing. Several processes on one host may open it at once. */
  path: string
  /** @default 'fsync' */
  durability?: Durability
  /** Where warnings go (a failed commit, writes resumed). Default: stderr. */
  log?: (line: string) => void
  /**
   * How long, in milliseconds, the main thread applies one commit's writes at most while reads
   * wait (a write already begun finishes); the rest go into the next commit. @default 10
   */
  applyMs?: number
}

/** Counters of a file store, for tests, tools and benchmarks. */
export interface FileStoreStats {
  /** False after a failed commit until a commit succeeds again (the store heals by itself). */
  healthy: boolean
  /** Writes this process committed since open (concurrent ones share commits). */
  writes: number
  /** Commits this process made since open. */
  commits: number
  /** Bytes of the data file. */
  bytes: number
}

/** A `Store` kept in one directory, with its counters. */
export interface FileStore extends Store {
  stats(): FileStoreStats
}
