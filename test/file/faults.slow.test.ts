import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdir, open, stat, truncate, unlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { open as openLmdb } from 'lmdb'
import { afterAll, describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { createHttpHandler } from '../../adapters/http/index.js'
import { createService, manualClock } from '../../entry/index.js'
import { isStoreError } from '../../src/store/error.js'
import { NOW, put } from './fixtures.js'
import { tempDir } from './helpers.js'

/** Whether this process may mount a tmpfs (root with the capability): the disk-full test needs one. */
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
// In CI the disk-full test must run: a CI machine that can't mount fails here, loudly.
if (!canMount && process.env['CI'])
  throw new Error('CI: the disk-full test needs to mount a small tmpfs (root)')
if (!canMount) console.warn('skipping the disk-full test: mounting a small tmpfs needs root')

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

/** Fills what is left of the disk holding `dir` by appending to a ballast file there; returns its path. */
async function fill(dir: string): Promise<string> {
  const ballast = join(dir, 'ballast')
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
  it('answers 503 with Retry-After while the disk is full (reads too: their audit entries), resumes without a restart, loses nothing acknowledged', async () => {
    const disk = await smallDisk('4m')
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
    for (let i = 0; i < 2000 && !full; i++) {
      const answer = await call('POST', '/tokens', { type: 'token', data: `${i}`.padEnd(2000, 'y') })
      if (answer.status === 201) acknowledged.push(((await answer.json()) as { id: string }).id)
      else full = answer
    }
    expect(full?.status).toBe(503)
    expect(Number(full!.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(((await full!.json()) as { detail: string }).detail).toMatch(/no space left/)
    expect(store.stats().healthy).toBe(false)
    // A read is refused too while it is full: its audit entry can't be committed, and no data is
    // answered without its entry. A refused write stays refused while it is full.
    expect((await call('GET', `/tokens/${acknowledged[0]}`)).status).toBe(503)
    expect((await call('POST', '/tokens', { type: 'token', data: 'z'.repeat(2000) })).status).toBe(503)
    // Space comes back: the next write goes through, with no restart.
    await unlink(ballast)
    const after = await call('POST', '/tokens', { type: 'token', data: 'after' })
    expect(after.status).toBe(201)
    acknowledged.push(((await after.json()) as { id: string }).id)
    expect(store.stats().healthy).toBe(true)
    expect(logs.some((l) => /a commit failed/.test(l))).toBe(true)
    expect(logs.some((l) => /writes resumed/.test(l))).toBe(true)
    await service.close()

    const again = await fileStore({ path })
    const ids = new Set((await again.dump()).tokens.map((t) => t.id))
    expect(acknowledged.filter((id) => !ids.has(id))).toEqual([])
    expect(ids.size).toBe(acknowledged.length)
    await again.close()
  }, 60_000)
})

describe('file store files', () => {
  it('makes its directory 0700 and its files 0600', async () => {
    const path = join(await tempDir(), 'store')
    const store = await fileStore({ path })
    await store.write({ ops: [put('a')] })
    expect((await stat(path)).mode & 0o777).toBe(0o700)
    for (const name of ['data.mdb', 'lock.mdb'])
      expect((await stat(join(path, name))).mode & 0o777).toBe(0o600)
    await store.close()
  })

  it('refuses a data file that is not LMDB with a coded StoreError', async () => {
    const path = join(await tempDir(), 'store')
    await mkdir(path)
    await writeFile(join(path, 'data.mdb'), randomBytes(64 * 1024))
    const error = await fileStore({ path }).catch((e: unknown) => e)
    expect(isStoreError(error, 'corrupt')).toBe(true)
  })

  it('refuses a data file cut short, and a file that is not one at all, with a coded StoreError', async () => {
    const path = join(await tempDir(), 'store')
    const store = await fileStore({ path })
    await store.write({ ops: Array.from({ length: 200 }, (_, i) => put(`t${i}`, { data: 'd'.repeat(500) })) })
    await store.close()
    await truncate(join(path, 'data.mdb'), 3 * 4096)
    expect(isStoreError(await fileStore({ path }).catch((e: unknown) => e), 'corrupt')).toBe(true)
    await writeFile(join(path, 'data.mdb'), Buffer.from('tokenvault? no'))
    expect(isStoreError(await fileStore({ path }).catch((e: unknown) => e), 'corrupt')).toBe(true)
  })

  it("refuses another program's LMDB environment, and one of a newer format", async () => {
    const foreign = join(await tempDir(), 'foreign')
    const env = openLmdb({ path: foreign })
    await env.put('hello', 'world')
    await env.close()
    expect(isStoreError(await fileStore({ path: foreign }).catch((e: unknown) => e), 'corrupt')).toBe(true)

    const newer = join(await tempDir(), 'newer')
    const store = await fileStore({ path: newer })
    await store.close()
    const raw = openLmdb({ path: newer, keyEncoding: 'binary', encoding: 'json', maxDbs: 30 })
    await raw.openDB({ name: 'meta', keyEncoding: 'binary', encoding: 'json' }).put(Buffer.from('format'), 99)
    await raw.close()
    expect(isStoreError(await fileStore({ path: newer }).catch((e: unknown) => e), 'schema_newer')).toBe(true)
  })

  it('opens a directory it may not write with a coded StoreError', async () => {
    const path = join(await tempDir(), 'store')
    await writeFile(path, 'a file, not a directory')
    const error = await fileStore({ path }).catch((e: unknown) => e)
    expect(isStoreError(error, 'unavailable')).toBe(true)
  })
})
