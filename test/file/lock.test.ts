import { spawn } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { put } from './fixtures.js'
import { closed, lineMatching, startChild, tempDir } from './helpers.js'

/** The pid of a process that has exited (and been reaped). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' })
  await new Promise((resolve) => child.once('exit', resolve))
  return child.pid!
}

/** The pid the lock file names. */
const holder = async (dir: string) =>
  (JSON.parse(await readFile(join(dir, 'LOCK'), 'utf8')) as { pid: number }).pid

describe('file store directory lock', () => {
  it('refuses a second open in the same process at once, until the first is closed', async () => {
    const dir = await tempDir()
    const first = await fileStore({ path: dir, durability: 'none' })
    await expect(fileStore({ path: dir })).rejects.toThrow(/is already open in this process/)
    await expect(fileStore({ path: join(dir, '.', '') })).rejects.toThrow(/is already open in this process/)
    expect(await holder(dir)).toBe(process.pid)
    await first.write({ ops: [put('a')] })
    await first.close()
    await expect(readFile(join(dir, 'LOCK'))).rejects.toThrow(/ENOENT/)
    await expect(first.getToken('tenant-a', 'a')).rejects.toThrow(/closed/)
    await expect(first.write({ ops: [put('b')] })).rejects.toThrow(/closed/)
    await first.close() // closing twice is harmless
    const second = await fileStore({ path: dir, durability: 'none' })
    expect(await second.getToken('tenant-a', 'a')).not.toBeNull()
    await second.close()
  })

  it('lets exactly one of several concurrent opens in one process win', async () => {
    const dir = await tempDir()
    const results = await Promise.allSettled(Array.from({ length: 5 }, () => fileStore({ path: dir })))
    const opened = results.filter((r) => r.status === 'fulfilled')
    expect(opened).toHaveLength(1)
    await (opened[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof fileStore>>>).value.close()
  })

  it('refuses to open while another live process holds the store, and takes over once it is killed', async () => {
    const dir = await tempDir()
    const child = startChild(['hold', dir])
    try {
      await lineMatching(child, (line) => line === 'ready')
      await expect(fileStore({ path: dir })).rejects.toThrow(`is locked by process ${child.pid}`)
    } finally {
      child.kill('SIGKILL')
      await closed(child)
    }
    const store = await fileStore({ path: dir })
    expect(await holder(dir)).toBe(process.pid)
    await store.close()
  })

  it('takes over a lock left by a dead process, or by an earlier process with this pid', async () => {
    const dir = await tempDir()
    for (const stale of [String(await deadPid()), String(process.pid), 'garbage']) {
      await writeFile(join(dir, 'LOCK'), `${stale}\n`)
      const store = await fileStore({ path: dir, durability: 'none' })
      expect(await holder(dir)).toBe(process.pid)
      await store.close()
    }
  })

  it('releases the lock when an open fails', async () => {
    const dir = await tempDir()
    await writeFile(
      join(dir, 'journal.0.log'),
      Buffer.from([1, 0, 0, 0, 0, 0, 0, 0, 0x5b, 9, 0, 0, 0, 0, 0, 0, 0, 0]),
    )
    // A bad first record followed by a valid-looking frame would be middle damage; here nothing
    // valid follows, so it is a torn tail and the open succeeds.
    const store = await fileStore({ path: dir, durability: 'none' })
    await store.close()
    await writeFile(join(dir, 'snapshot.1.json'), 'not a snapshot')
    await expect(fileStore({ path: dir })).rejects.toThrow(/snapshot .* is damaged/)
    await expect(readFile(join(dir, 'LOCK'))).rejects.toThrow(/ENOENT/)
    await expect(fileStore({ path: dir })).rejects.toThrow(/snapshot .* is damaged/)
  })
})
