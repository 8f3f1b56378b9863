import { randomBytes } from 'node:crypto'
import * as fs from 'node:fs'
import { link, readFile, realpath, rename, stat, unlink, writeFile } from 'node:fs/promises'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { StoreError } from '../../src/store/error.js'
import { isCode } from './io.js'

/** The name of the lock file inside a store's directory: who holds the store, refreshed by a heartbeat. */
export const LOCK_FILE = 'LOCK'

/** Directories opened by this process, shared by every copy of this module (keyed by real path). */
const registry = globalThis as Record<symbol, Set<string> | undefined>
const LOCKS = Symbol.for('tokenvault.fileStore.locks')
registry[LOCKS] ??= new Set<string>()
const held: Set<string> = registry[LOCKS]

/** How long a lock of a process this one can't see must go without a heartbeat to count as stale. */
export const DEFAULT_LOCK_STALE_MS = 10_000

/** A held directory lock. `release()` removes the lock file; call it once. */
export interface DirectoryLock {
  /** Throws once another process has taken the lock over (this one then must not write). */
  check(): void
  release(): Promise<void>
}

/** What a lock file says about its holder. */
interface Owner {
  pid: number
  /** The kernel's boot id and the holder's PID namespace: where its pid means something. */
  boot: string
  pidns: string
  host: string
  token: string
  /** How often the holder refreshes the lock file's modification time (ms). */
  beatMs: number
}

/** Where this process runs: its pid is meaningful only to processes with the same boot and PID namespace. */
const here = (() => {
  const read = (f: () => string) => {
    try {
      return f().trim()
    } catch {
      return ''
    }
  }
  return {
    boot: read(() => fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8')),
    pidns: read(() => fs.readlinkSync('/proc/self/ns/pid')),
    host: hostname(),
  }
})()

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return !isCode(error, 'ESRCH')
  }
}

/**
 * Reads the lock file: its holder (a version-1 file holds only a pid, taken to be of this
 * namespace), `'garbage'` when unreadable, or null when there is none; with its modification time.
 */
async function readOwner(path: string): Promise<{ owner: Owner | 'garbage'; mtimeMs: number } | null> {
  let text: string
  let mtimeMs: number
  try {
    ;[text, mtimeMs] = await Promise.all([readFile(path, 'utf8'), stat(path).then((s) => s.mtimeMs)])
  } catch (error) {
    if (isCode(error, 'ENOENT')) return null
    throw error
  }
  if (/^\d+\n?$/.test(text)) {
    const pid = Number.parseInt(text, 10)
    return {
      owner: { pid, boot: here.boot, pidns: here.pidns, host: here.host, token: '', beatMs: 0 },
      mtimeMs,
    }
  }
  try {
    const o = JSON.parse(text) as Partial<Owner>
    if (
      Number.isSafeInteger(o.pid) &&
      typeof o.boot === 'string' &&
      typeof o.pidns === 'string' &&
      typeof o.token === 'string'
    ) {
      const beatMs = typeof o.beatMs === 'number' && o.beatMs > 0 ? o.beatMs : 0
      const owner = {
        pid: o.pid!,
        boot: o.boot,
        pidns: o.pidns,
        host: String(o.host),
        token: o.token,
        beatMs,
      }
      return { owner, mtimeMs }
    }
  } catch {}
  return { owner: 'garbage', mtimeMs }
}

/**
 * Whether a lock held by `owner` is stale. A holder in this boot and PID namespace is checked by
 * its pid (a pid that is ours belongs to an earlier process, say before a container restart);
 * any other holder — another container, PID namespace, host or boot — only by its heartbeat.
 */
function stale(owner: Owner | 'garbage', mtimeMs: number, staleMs: number): boolean {
  // The lock file appears whole (a hard link of a finished file): an unreadable one is damage.
  if (owner === 'garbage') return true
  const sameNamespace = owner.boot !== '' && owner.boot === here.boot && owner.pidns === here.pidns
  if (sameNamespace) return owner.pid === process.pid || !alive(owner.pid)
  // Never sooner than three of the holder's own heartbeats, whatever this process was told.
  return Date.now() - mtimeMs > Math.max(staleMs, 3 * owner.beatMs)
}

const busy = (dir: string, owner: Owner | 'garbage') =>
  new Error(
    `fileStore: ${dir} is locked by ${
      owner === 'garbage' ? 'an unreadable lock file' : `process ${owner.pid} on ${owner.host}`
    } (${join(dir, LOCK_FILE)}); a store directory has one writer. A lock whose holder is gone is taken ` +
      'over once its heartbeat stops (within seconds), or at once when the holder shared this PID namespace.',
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

/** Whether another live store holds `dir` (so its files must not be touched). */
export async function lockedByAnother(dir: string, staleMs = DEFAULT_LOCK_STALE_MS): Promise<boolean> {
  const found = await readOwner(join(dir, LOCK_FILE))
  return found !== null && !stale(found.owner, found.mtimeMs, staleMs)
}

/**
 * Takes the single-writer lock of `dir`, failing at once if another store holds it: one opened by
 * this process, or another process whose lock is live. The lock file names its holder's pid, boot
 * id, PID namespace and a random token; the holder refreshes its modification time every
 * `staleMs / 5` (a heartbeat), so a holder in another container or PID namespace — where its pid
 * means nothing here — is judged by that heartbeat alone, and two processes in different
 * namespaces sharing the directory never both open it.
 *
 * The lock file appears whole (written aside, then hard-linked into place), and a stale one is
 * first renamed aside, so two processes racing for a stale lock cannot both win. A holder whose
 * lock was taken over (it stalled past `staleMs`) finds out at its next heartbeat or `check()`.
 */
export async function lockDirectory(dir: string, staleMs = DEFAULT_LOCK_STALE_MS): Promise<DirectoryLock> {
  const real = await realpath(dir)
  if (held.has(real))
    throw new Error(`fileStore: ${dir} is already open in this process; close that store first`)
  held.add(real)
  const lockPath = join(dir, LOCK_FILE)
  const token = randomBytes(16).toString('hex')
  const mine = join(dir, `${LOCK_FILE}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`)
  const beatMs = Math.max(10, Math.floor(staleMs / 5))
  const owner: Owner = { pid: process.pid, ...here, token, beatMs }
  let fd: number
  try {
    await writeFile(mine, `${JSON.stringify(owner)}\n`, { mode: 0o600 })
    for (let attempt = 0; ; attempt++) {
      try {
        await place(mine, lockPath)
        break
      } catch (error) {
        if (!isCode(error, 'EEXIST') || attempt >= 5) throw error
      }
      const found = await readOwner(lockPath)
      if (found === null) continue
      if (!stale(found.owner, found.mtimeMs, staleMs)) throw busy(dir, found.owner)
      // Stale: move it aside atomically, and put it back if it turns out to be a fresh one.
      const aside = `${mine}.stale`
      try {
        await rename(lockPath, aside)
      } catch (error) {
        if (isCode(error, 'ENOENT')) continue
        throw error
      }
      const moved = await readOwner(aside)
      const same =
        moved !== null &&
        (moved.owner === 'garbage'
          ? found.owner === 'garbage'
          : found.owner !== 'garbage' &&
            moved.owner.token === found.owner.token &&
            moved.owner.pid === found.owner.pid)
      if (moved !== null && !same && !stale(moved.owner, moved.mtimeMs, staleMs)) {
        await link(aside, lockPath).catch(() => {})
        await unlink(aside)
        throw busy(dir, moved.owner)
      }
      await unlink(aside)
    }
    fd = fs.openSync(lockPath, 'r')
  } catch (error) {
    held.delete(real)
    throw error
  } finally {
    await unlink(mine).catch(() => {})
  }

  let lost: StoreError | null = null
  let released = false
  const loseIfTaken = () => {
    if (lost || released) return
    // Taking a lock over renames our file aside and unlinks it: our descriptor's inode loses its name.
    if (fs.fstatSync(fd).nlink === 0) {
      lost = new StoreError(
        'locked',
        `fileStore: the lock of ${dir} was taken over by another process; this store stops writing`,
      )
    }
  }
  const beat = setInterval(() => {
    if (released) return
    try {
      const now = new Date()
      fs.futimesSync(fd, now, now)
      loseIfTaken()
    } catch {}
  }, beatMs)
  beat.unref()
  return {
    check: () => {
      loseIfTaken()
      if (lost) throw lost
    },
    release: async () => {
      if (released) return
      released = true
      clearInterval(beat)
      try {
        const found = await readOwner(lockPath)
        if (found && found.owner !== 'garbage' && found.owner.token === token) await unlink(lockPath)
      } finally {
        fs.closeSync(fd)
        held.delete(real)
      }
    },
  }
}
