import { statfsSync } from 'node:fs'
import { StoreError } from '../../src/store/index.js'

/** Below this many free bytes on the store's filesystem, a failed commit counts as a full disk. */
const LOW_SPACE_BYTES = 8 * 1024 * 1024

const FULL = new Set(['ENOSPC', 'EDQUOT', 'EFBIG', 28, 122, 27])

/** LMDB's error numbers for a full map or a damaged environment. */
const MDB_MAP_FULL = -30792
const CORRUPTED = new Set([-30796, -30794, -30793, -30795]) // CORRUPTED, VERSION_MISMATCH, INVALID, PANIC
/** LMDB's error number for a page a B-tree names and the file does not hold. */
const MDB_PAGE_NOTFOUND = -30797
/** LMDB's error number once the environment is unusable until it is opened again. */
const MDB_PANIC = -30795

/** Free bytes on the filesystem holding `dir`, or Infinity when that can't be read. */
function freeBytes(dir: string): number {
  try {
    const s = statfsSync(dir)
    return s.bavail * s.bsize
  } catch {
    return Number.POSITIVE_INFINITY
  }
}

/**
 * The `StoreError` a failed commit is answered with: `full` (no space or quota left, or LMDB's map
 * full: LMDB reports a short write as EIO, so a filesystem nearly out of space counts as full) or
 * `unavailable` (any other I/O error), both retryable. Its message names no path and no value.
 */
export function diskError(cause: unknown, dir: string): StoreError {
  if (cause instanceof StoreError) return cause
  const code = (cause as { code?: string | number } | null)?.code
  if ((code !== undefined && FULL.has(code)) || code === MDB_MAP_FULL || freeBytes(dir) < LOW_SPACE_BYTES) {
    return new StoreError('full', 'fileStore: the disk is full; writes resume once it has room', {
      retryAfter: 5,
      cause,
    })
  }
  return new StoreError(
    'unavailable',
    `fileStore: a disk write failed${code !== undefined ? ` (${code})` : ''}; writes resume once the disk takes them`,
    { retryAfter: 1, cause },
  )
}

/**
 * The `StoreError` a failed read is answered with, or `cause` itself when it carries no error
 * number (a fault of this code, not of the store: it stays an internal error). LMDB's errors carry
 * theirs (`code`): a damaged environment is `corrupt` (HTTP 500: what the store holds can't be read
 * back); any other (a full reader table, a resized map, an I/O error, LMDB's panic, after which the
 * store opens the environment again: `needsReopen`) is `unavailable`, retryable (HTTP 503), as a
 * failed commit is. Its message names no path, key or value.
 */
export function readError(cause: unknown): unknown {
  if (cause instanceof StoreError) return cause
  const code = (cause as { code?: unknown } | null)?.code
  if (typeof code !== 'number') return cause
  if (code !== MDB_PANIC && (CORRUPTED.has(code) || code === MDB_PAGE_NOTFOUND))
    return new StoreError('corrupt', `fileStore: a read found the store's files damaged (${code})`, { cause })
  return new StoreError(
    'unavailable',
    `fileStore: a read failed (${code}); reads resume once the store answers`,
    {
      retryAfter: 1,
      cause,
    },
  )
}

/** Whether `cause` says the environment must be opened again before it takes writes (LMDB's panic). */
export function needsReopen(cause: unknown): boolean {
  const code = (cause as { code?: unknown } | null)?.code
  return code === MDB_PANIC || /MDB_PANIC|fatal error/i.test(String((cause as Error | null)?.message))
}

/** The `StoreError` a failed open is answered with: never a raw error, never a crash. */
export function openError(cause: unknown, dir: string): StoreError {
  if (cause instanceof StoreError) return cause
  const code = (cause as { code?: string | number } | null)?.code
  const message = String((cause as Error | null)?.message ?? cause)
  if (
    (typeof code === 'number' && CORRUPTED.has(code)) ||
    /MDB_INVALID|not an LMDB|version mismatch|MDB_CORRUPTED|Invalid argument/i.test(message)
  )
    return new StoreError(
      'corrupt',
      `fileStore: ${dir} holds files that are not a readable tokenvault store`,
      { cause },
    )
  if (code === 'EACCES' || code === 'EPERM' || code === 'ENOTDIR' || code === 'EROFS')
    return new StoreError('unavailable', `fileStore: ${dir} can't be opened (${code})`, {
      retryAfter: 5,
      cause,
    })
  if (code !== undefined && FULL.has(code)) return diskError(cause, dir)
  return new StoreError('unavailable', `fileStore: ${dir} can't be opened: ${message}`, {
    retryAfter: 5,
    cause,
  })
}
