import * as fs from 'node:fs'
import { open } from 'node:fs/promises'

/**
 * Thin promise wrappers over the callback `node:fs` calls on the hot path (they cost less than
 * `fs/promises` file handles), plus the directory fsync that makes renames and creations durable.
 */

/** Writes all of `data` at byte `position` of `fd`, looping over short writes. */
export async function writeAll(fd: number, data: Uint8Array, position: number): Promise<void> {
  let done = 0
  while (done < data.length) {
    done += await new Promise<number>((resolve, reject) =>
      fs.write(fd, data, done, data.length - done, position + done, (error, written) =>
        error ? reject(error) : resolve(written),
      ),
    )
  }
}

/** `fdatasync(2)`: the file's data (and the size needed to read it back) reach the disk. */
export function fdatasync(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fs.fdatasync(fd, (error) => (error ? reject(error) : resolve())))
}

/** `fsync(2)`: the file's data and all its metadata reach the disk. */
export function fsync(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fs.fsync(fd, (error) => (error ? reject(error) : resolve())))
}

/** Closes a descriptor. */
export function closeFd(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fs.close(fd, (error) => (error ? reject(error) : resolve())))
}

/** Fsyncs a directory, so that the names created, renamed or removed in it are durable. */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

/** Whether an error is a Node system error with this `code` (`ENOENT`, `EEXIST`, ...). */
export function isCode(error: unknown, code: string): boolean {
  return (error as NodeJS.ErrnoException | null)?.code === code
}

/** Files the store creates are readable and writable by their owner only; directories likewise. */
export const FILE_MODE = 0o600
export const DIRECTORY_MODE = 0o700

/**
 * Opens a file and returns its raw descriptor (`flags` as `fs.open` takes them: `'w'`,
 * `O_RDWR | ...`). A file it creates is 0600, and an existing one is set to 0600 (the umask can
 * only take permissions away; `fchmod` also tightens a file an older version made 0644).
 */
export function openFd(path: string, flags: string | number): Promise<number> {
  return new Promise((resolve, reject) =>
    fs.open(path, flags, FILE_MODE, (error, fd) => {
      if (error) return reject(error)
      fs.fchmod(fd, FILE_MODE, (chmodError) => {
        if (!chmodError) return resolve(fd)
        fs.close(fd, () => reject(chmodError))
      })
    }),
  )
}

/**
 * Flags for opening a journal for appending: read-write, created if missing, truncated if `fresh`,
 * and with `O_DSYNC` when `dsync` (every write returns only once durable, as if followed by
 * `fdatasync`).
 */
export function journalFlags(dsync: boolean, fresh: boolean): number {
  const { O_RDWR, O_CREAT, O_TRUNC, O_DSYNC } = fs.constants
  return O_RDWR | O_CREAT | (fresh ? O_TRUNC : 0) | (dsync ? O_DSYNC : 0)
}

/** Truncates a file to `length` bytes. */
export function ftruncate(fd: number, length: number): Promise<void> {
  return new Promise((resolve, reject) =>
    fs.ftruncate(fd, length, (error) => (error ? reject(error) : resolve())),
  )
}

/** Reads up to `length` bytes at byte `position` of `fd` into `buffer` at `offset`; resolves to the bytes read (0 at the end). */
export async function readAt(
  fd: number,
  buffer: Uint8Array,
  offset: number,
  length: number,
  position: number,
): Promise<number> {
  let done = 0
  while (done < length) {
    const read = await new Promise<number>((resolve, reject) =>
      fs.read(fd, buffer, offset + done, length - done, position + done, (error, n) =>
        error ? reject(error) : resolve(n),
      ),
    )
    if (read === 0) break
    done += read
  }
  return done
}
