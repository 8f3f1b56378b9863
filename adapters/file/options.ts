import type { Store, WriteResult } from '../../src/store/index.js'
import type { CommitsOn, ForwardedWrite } from './forward.js'

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
  /**
   * For a store a second thread of the process opens over the same directory (the heavy lane of
   * `tokenvault serve`): its writes are not committed by this thread but handed to the thread that
   * commits for the process (`commitForwarded` of that thread's store), through this function
   * (`adapters/file/forward.ts` says why). Reads stay this thread's. Default: this store commits.
   */
  commitsOn?: CommitsOn
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
  /** Commits a write another thread of the process forwarded (`FileStoreOptions.commitsOn`), in this store's group commit. */
  commitForwarded(write: ForwardedWrite): Promise<WriteResult>
}
