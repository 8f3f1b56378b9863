import { randomBytes } from 'node:crypto'
import { link, readFile, realpath, rename, unlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { isCode } from './io.js'

/** The name of the lock file inside a store's directory. It holds the owner's pid. */
export const LOCK_FILE = 'LOCK'

/** Directories opened by this process, shared by every copy of this module (keyed by real path). */
const registry = globalThis as Record<symbol, Set<string> | undefined>
const LOCKS = Symbol.for('tokenvault.fileStore.locks')
registry[LOCKS] ??= new Set<string>()
const held: Set<string> = registry[LOCKS]

/** A held directory lock. `release()` removes the lock file; call it once. */
export interface DirectoryLock {
  release(): Promise<void>
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return !isCode(error, 'ESRCH')
  }
}

const readPid = async (path: string): Promise<number | null> => {
  const text = await readFile(path, 'utf8').catch((error) => {
    if (isCode(error, 'ENOENT')) return null
    throw error
  })
  if (text === null) return null
  const pid = Number.parseInt(text, 10)
  return Number.isSafeInteger(pid) && pid > 0 ? pid : 0
}

const busy = (dir: string, pid: number) =>
  new Error(
    `fileStore: ${dir} is locked by process ${pid} (${join(dir, LOCK_FILE)}); a store directory has one writer. ` +
      'If that process is not a tokenvault store, remove the LOCK file.',
  )

/** Creates `lockPath` holding what `written` holds, failing with EEXIST if it exists. */
async function place(written: string, lockPath: string): Promise<void> {
  try {
    await link(written, lockPath)
  } catch (error) {
    // Filesystems without hard links: create it exclusively instead (briefly empty while written).
    if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS'].some((code) => isCode(error, code))) throw error
    await writeFile(lockPath, await readFile(written), { flag: 'wx', mode: 0o600 })
  }
}

/**
 * Takes the single-writer lock of `dir`, failing at once if another store holds it: one opened by
 * this process, or a live process whose pid is in the `LOCK` file. A lock left by a dead process
 * (or by an earlier process with this pid, say after a container restart) is taken over.
 *
 * The lock file appears whole (written aside, then hard-linked into place), and a stale one is
 * first renamed aside, so two processes racing for a stale lock cannot both win.
 */
export async function lockDirectory(dir: string): Promise<DirectoryLock> {
  const real = await realpath(dir)
  if (held.has(real))
    throw new Error(`fileStore: ${dir} is already open in this process; close that store first`)
  held.add(real)
  const lockPath = join(dir, LOCK_FILE)
  const mine = join(dir, `${LOCK_FILE}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`)
  try {
    await writeFile(mine, `${process.pid}\n`, { mode: 0o600 })
    for (let attempt = 0; ; attempt++) {
      try {
        await place(mine, lockPath)
        break
      } catch (error) {
        if (!isCode(error, 'EEXIST') || attempt >= 5) throw error
      }
      const owner = await readPid(lockPath)
      if (owner === null) continue
      if (owner !== process.pid && owner !== 0 && alive(owner)) throw busy(dir, owner)
      // Stale: move it aside atomically, and put it back if it turns out to be a fresh one.
      const aside = `${mine}.stale`
      try {
        await rename(lockPath, aside)
      } catch (error) {
        if (isCode(error, 'ENOENT')) continue
        throw error
      }
      const moved = await readPid(aside)
      if (moved !== owner && moved !== null && moved !== 0 && alive(moved)) {
        await link(aside, lockPath).catch(() => {})
        await unlink(aside)
        throw busy(dir, moved)
      }
      await unlink(aside)
    }
  } catch (error) {
    held.delete(real)
    throw error
  } finally {
    await unlink(mine).catch(() => {})
  }
  let released = false
  return {
    release: async () => {
      if (released) return
      released = true
      try {
        if ((await readPid(lockPath)) === process.pid) await unlink(lockPath)
      } finally {
        held.delete(real)
      }
    },
  }
}
