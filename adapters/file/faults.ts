import { unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { StoreError } from '../../src/store/error.js'
import { closeFd, fdatasync, openFd, writeAll } from './io.js'

/** The file a probe writes to learn whether the disk takes writes again; a leftover is removed on open. */
export const PROBE_FILE = 'probe.tmp'

const PROBE_BYTES = 64 * 1024
const FULL = new Set(['ENOSPC', 'EDQUOT', 'EFBIG'])

/**
 * The `StoreError` a failed disk operation is answered with: `full` (no space or quota left) or
 * `unavailable` (an I/O error or anything else), both retryable. Its message names no path.
 */
export function diskError(cause: unknown): StoreError {
  if (cause instanceof StoreError) return cause
  const code = (cause as NodeJS.ErrnoException | null)?.code
  if (code !== undefined && FULL.has(code)) {
    return new StoreError('full', 'fileStore: the disk is full; writes resume once it has room', {
      retryAfter: 5,
      cause,
    })
  }
  return new StoreError(
    'unavailable',
    `fileStore: a disk write failed${code ? ` (${code})` : ''}; writes resume once the disk takes them`,
    {
      retryAfter: 1,
      cause,
    },
  )
}

/** Writes and syncs `PROBE_BYTES` to the probe file, then removes it: throws while the disk can't take them. */
export async function probeDisk(dir: string, durable: boolean): Promise<void> {
  const path = join(dir, PROBE_FILE)
  const fd = await openFd(path, 'w')
  try {
    await writeAll(fd, Buffer.alloc(PROBE_BYTES), 0)
    if (durable) await fdatasync(fd)
  } finally {
    await closeFd(fd).catch(() => {})
    await unlink(path).catch(() => {})
  }
}
