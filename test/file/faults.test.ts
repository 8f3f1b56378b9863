import { execFileSync, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdir, open, readdir, readFile, truncate, unlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { createHttpHandler } from '../../adapters/http/index.js'
import { createService, manualClock } from '../../src/index.js'
import { inCi } from '../environment.js'
import { NOW, put, T } from './fixtures.js'
import { CHILD, closed, healed, lineMatching, ROOT, tempDir } from './helpers.js'

/** Whether this process may mount a tmpfs (root with the capability): the disk-full tests need one. */
const canMount = (() => {
  if (process.getuid?.() !== 0) return false
  const probe = `/tmp/tokenvault-mount-probe-${process.pid}`
  try {
    execFileSync('mkdir', ['-p', probe])
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', probe], { stdio: 'ignore' })
    execFileSync('umount', [probe], { stdio: 'ignore' })
    return true
  } catch {
    return false
  } finally {
    execFileSync('rmdir', [probe])
  }
})()
const canUnshare = (() => {
  if (process.platform !== 'linux') return false
  try {
    execFileSync('unshare', ['--pid', '--fork', '--mount-proc', 'true'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
})()
if (!canMount) console.warn('skipping the disk-full tests: mounting a small tmpfs needs root')
if (!canUnshare)
  console.warn(
    'skipping the PID-namespace lock test: `unshare --pid --fork --mount-proc` is not allowed here',
  )
// In CI a missing environment fails instead: CI must run these as root, where both are possible.
if (inCi() && !(canMount && canUnshare)) {
  it('has a mountable tmpfs and a PID namespace for the fault tests', () => {
    throw new Error(
      `missing in CI: ${[canMount ? '' : 'mount -t tmpfs (root)', canUnshare ? '' : 'unshare --pid'].filter(Boolean).join(', ')}`,
    )
  })
}

const mounts: string[] = []
afterAll(() => {
  for (const dir of mounts) {
    try {
      execFileSync('umount', [dir], { stdio: 'ignore' })
    } catch {}
  }
})

/** A fresh tmpfs of `size` mounted on a new directory (unmounted after the file). */
async function smallDisk(size: string): Promise<string> {
  const dir = `/tmp/tokenvault-disk-${randomBytes(4).toString('hex')}`
  await mkdir(dir)
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir])
  mounts.push(dir)
  return dir
}

/** Fills what is left of the disk holding `dir` by appending to `name` there (a ballast file); returns its path. */
async function fill(dir: string, name = 'ballast'): Promise<string> {
  const ballast = join(dir, name)
  const chunk = Buffer.alloc(4096, 1)
  const handle = await open(ballast, 'a')
  try {
    for (;;) await handle.write(chunk)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error
  } finally {
    await handle.close()
  }
  return ballast
}

describe.skipIf(!canMount)('file store on a full disk', () => {
  it('answers 503 with Retry-After while the disk is full, serves reads, resumes by itself, loses nothing acknowledged', async () => {
    const disk = await smallDisk('2m')
    const path = join(disk, 'store')
    const logs: string[] = []
    const store = await fileStore({ path, log: (l) => logs.push(l) })
    const service = createService({
      store,
      clock: manualClock(NOW),
      masterKey: Buffer.alloc(32, 3),
      runner: null,
    })
    const handler = createHttpHandler(service)
    const tenant = await service.admin.createTenant({ name: 'acme' })
    const perms = ['token:create', 'token:read'] as const
    const { key } = await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'app',
      type: 'private',
      permissions: [...perms],
      rules: [
        {
          description: 'all',
          priority: 1,
          container: '/general/',
          transform: 'reveal',
          permissions: [...perms],
        },
      ],
    })
    const call = (method: string, path: string, body?: unknown) =>
      handler(
        new Request(`http://vault${path}`, {
          method,
          headers: { 'SVC-API-KEY': key, 'content-type': 'application/json' },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        }),
      )
    const acknowledged: string[] = []
    const first = await call('POST', '/tokens', { type: 'token', data: 'x'.repeat(2000) })
    expect(first.status).toBe(201)
    acknowledged.push(((await first.json()) as { id: string }).id)
    const ballast = await fill(disk)
    let full: Response | undefined
    for (let i = 0; i < 200 && !full; i++) {
      const answer = await call('POST', '/tokens', { type: 'token', data: `${i}`.padEnd(2000, 'y') })
      if (answer.status === 201) acknowledged.push(((await answer.json()) as { id: string }).id)
      else full = answer
    }
    expect(full?.status).toBe(503)
    expect(Number(full!.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(((await full!.json()) as { detail: string }).detail).toMatch(/no space left/)
    // Reads are served while writes are refused.
    expect((await call('GET', `/tokens/${acknowledged[0]}`)).status).toBe(200)
    expect((await call('POST', '/tokens', { type: 'token', data: 'refused' })).status).toBe(503)
    expect(store.stats().healthy).toBe(false)
    // It tries again on its own and keeps failing while the disk stays full.
    const started = performance.now()
    while (!logs.some((l) => /still failing/.test(l))) {
      if (performance.now() - started > 5000) throw new Error('no retry while the disk was full')
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    expect(store.stats().healthy).toBe(false)
    expect((await call('POST', '/tokens', { type: 'token', data: 'still refused' })).status).toBe(503)
    // Space comes back: the store notices by itself.
    await unlink(ballast)
    await healed(store)
    const after = await call('POST', '/tokens', { type: 'token', data: 'after' })
    expect(after.status).toBe(201)
    acknowledged.push(((await after.json()) as { id: string }).id)
    expect(logs.some((l) => /a write failed/.test(l))).toBe(true)
    await service.close()

    const again = await fileStore({ path })
    const ids = new Set((await again.dump()).tokens.map((t) => t.id))
    expect(acknowledged.filter((id) => !ids.has(id))).toEqual([])
    expect(ids.size).toBe(acknowledged.length)
    await again.close()
  }, 30_000)

  it('a compaction that runs out of space removes its temp file and the store goes on; leftovers never block a start', async () => {
    const disk = await smallDisk('1m')
    const path = join(disk, 'store')
    const logs: string[] = []
    const store = await fileStore({ path, compactMinBytes: 1e12, log: (l) => logs.push(l) })
    for (let i = 0; i < 40; i++) await store.write({ ops: [put(`t${i}`, { data: 'z'.repeat(4000) })] })
    const ballast = await fill(disk)
    await expect(store.compact()).rejects.toMatchObject({ code: 'full' })
    expect((await readdir(path)).filter((n) => n.endsWith('.tmp'))).toEqual([])
    expect(logs.some((l) => /compaction failed, going on in generation 0/.test(l))).toBe(true)
    expect(store.stats()).toMatchObject({ healthy: true, generation: 0 })
    expect(await store.getToken(T, 't39')).not.toBeNull()
    await unlink(ballast)
    await store.write({ ops: [put('after')] })
    await store.close()

    // A crash mid-compaction left a temp file that fills the disk: the next start removes it first.
    await fill(path, 'snapshot.1.json.tmp')
    const reopened = await fileStore({ path })
    expect((await readdir(path)).filter((n) => n.endsWith('.tmp'))).toEqual([])
    expect((await reopened.dump()).tokens).toHaveLength(41)
    await reopened.close()
  }, 30_000)
})

describe('file store torn tails', () => {
  async function journalWithRecords(n: number) {
    const dir = await tempDir()
    const store = await fileStore({ path: dir, durability: 'none' })
    for (let i = 0; i < n; i++) await store.write({ ops: [put(`t${i}`)] })
    await store.close()
    return { dir, journal: join(dir, 'journal.0.log') }
  }

  it('logs loudly how many records were dropped at which offset when a journal is cut short', async () => {
    const { dir, journal } = await journalWithRecords(10)
    const size = (await readFile(journal)).length
    // Halfway, and a few bytes into a record (the records are of equal size).
    await truncate(journal, Math.floor(size / 2) + 3)
    const logs: string[] = []
    const store = await fileStore({ path: dir, log: (l) => logs.push(l) })
    const kept = (await store.dump()).tokens.length
    expect(kept).toBeLessThan(10)
    const line = logs.find((l) => /WARNING: dropped 1 unreadable record/.test(l))
    expect(line).toMatch(new RegExp(`at byte offset ${store.stats().journalBytes}`))
    expect(line).toMatch(/cut short/)
    await store.close()
  })

  it('names a flipped bit in the last record as damage, and refuses to open with onTornTail: refuse', async () => {
    const { dir, journal } = await journalWithRecords(3)
    const bytes = await readFile(journal)
    bytes[bytes.length - 3]! ^= 0x01
    await writeFile(journal, bytes)
    await expect(fileStore({ path: dir, onTornTail: 'refuse' })).rejects.toThrow(
      /not whole, valid records .*fails its checksum.*onTornTail: 'refuse'/,
    )
    // Nothing was changed by the refusal: the bad record is still there.
    expect((await readFile(journal)).length).toBe(bytes.length)
    const logs: string[] = []
    const store = await fileStore({ path: dir, log: (l) => logs.push(l) })
    expect((await store.dump()).tokens.map((t) => t.id)).toEqual(['t0', 't1'])
    expect(logs.join('\n')).toMatch(/dropped 1 unreadable record .*fails its checksum: damage/)
    await store.close()
  })
})

describe.skipIf(!canUnshare)('file store lock across PID namespaces', () => {
  /** `child.ts hold DIR` in a PID namespace of its own (where it is pid 1, like a container's process). */
  const holdInNamespace = (dir: string) =>
    spawn(
      'unshare',
      [
        '--pid',
        '--fork',
        '--kill-child',
        '--mount-proc',
        process.execPath,
        '--import',
        'tsx',
        CHILD,
        'hold',
        dir,
      ],
      {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, LOCK_STALE_MS: '1000' },
      },
    )

  it('two holders in separate PID namespaces never both open one directory; a dead one is taken over once its heartbeat stops', async () => {
    const dir = await tempDir()
    const one = holdInNamespace(dir)
    try {
      await lineMatching(one, (l) => l === 'ready')
      const lock = JSON.parse(await readFile(join(dir, 'LOCK'), 'utf8')) as { pid: number; pidns: string }
      expect(lock.pid).toBe(1)
      const two = holdInNamespace(dir)
      const refused = await new Promise<string>((resolve) => {
        let stderr = ''
        two.stderr!.on('data', (d) => (stderr += d))
        two.once('close', () => resolve(stderr))
      })
      expect(refused).toMatch(/is locked by process 1 /)
      // This process is in yet another namespace: a live holder's pid means nothing here either.
      await expect(fileStore({ path: dir, lockStaleMs: 1000 })).rejects.toThrow(/is locked by process 1 /)
    } finally {
      one.kill('SIGKILL')
      await closed(one)
    }
    // The holder is gone: its heartbeat goes stale after three beats at least, then the lock is taken over.
    const started = performance.now()
    let store: Awaited<ReturnType<typeof fileStore>> | undefined
    while (!store) {
      store = await fileStore({ path: dir, lockStaleMs: 1000 }).catch(() => undefined)
      if (!store) await new Promise((resolve) => setTimeout(resolve, 100))
      if (performance.now() - started > 10_000) throw new Error('the stale lock was never taken over')
    }
    expect(performance.now() - started).toBeGreaterThan(300)
    await store.close()
  }, 30_000)
})
