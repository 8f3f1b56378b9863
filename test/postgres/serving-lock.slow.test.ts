import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, expect, it } from 'vitest'
import { lockOutServers, openStore } from '../../bin/stores.js'
import { start } from '../cli/spawn.js'
import { tempDir } from '../file/helpers.js'
import { describePostgres } from './database.js'

/**
 * `keys rotate-master` on PostgreSQL: a server holds an advisory lock shared while it serves, and
 * the rotation takes it exclusive. A slow test: one file at a time, so no other test's server holds
 * the lock meanwhile.
 */
describePostgres('keys rotate-master and the servers of a PostgreSQL store', (url) => {
  const pool = new pg.Pool({ connectionString: url, max: 2 })
  afterAll(() => pool.end())
  /** The lock's holders granted (or waiting), by anyone: its two keys as the CLI takes them. */
  const holders = async (granted: boolean) =>
    Number(
      (
        await pool.query<{ n: string }>(
          `SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND classid = $1 AND objid = $2
             AND objsubid = 2 AND granted = $3`,
          [0x74766c74, 1, granted],
        )
      ).rows[0]!.n,
    )
  /** Waits (at most 10 s, in steps of 25 ms) until `holders(granted)` is `n`. */
  const until = async (granted: boolean, n: number) => {
    for (let i = 0; i < 400 && (await holders(granted)) !== n; i++)
      await new Promise((r) => setTimeout(r, 25))
    expect(await holders(granted)).toBe(n)
  }

  it('refuses while a server serves it, holds it while rotating so a server that starts waits, and lets it go', async () => {
    const lines: string[] = []
    const served = await openStore(url, { serving: true, log: (line) => lines.push(line) })
    expect(await holders(true)).toBe(1)
    expect(await lockOutServers(url)).toEqual({ holders: 1 })
    const dir = await tempDir()
    writeFileSync(join(dir, '.tokenvault.key'), randomBytes(32).toString('base64'), { mode: 0o600 })
    const cli = start(['keys', 'rotate-master', '--store', url], dir)
    const [code] = await cli.exited
    expect(code).toBe(2)
    expect(cli.stderr()).toContain('is served by 1 server(s): stop every server on it')
    await served.release()
    await until(true, 0)

    // A server that starts while a rotation holds the lock opens its store only once it has ended.
    const release = await lockOutServers(url)
    expect(typeof release).toBe('function')
    let opened = false
    const next = openStore(url, { serving: true, log: (line) => lines.push(line) }).then((o) => {
      opened = true
      return o
    })
    await until(false, 1)
    expect(opened).toBe(false)
    expect(lines).toContain(
      'the store is being rotated (keys rotate-master): waiting for it to end before serving',
    )
    await (release as () => Promise<void>)()
    const second = await next
    expect(await holders(true)).toBe(1)
    expect(await holders(false)).toBe(0)

    // Its lock's connection ends: logged, and the lock taken again (5 s later).
    await pool.query(
      `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND classid = $1 AND objid = $2
         AND objsubid = 2 AND granted`,
      [0x74766c74, 1],
    )
    await until(true, 0)
    // A rotation that starts meanwhile holds the lock: the server's retake waits for its end, and
    // says so without saying it waits to serve (it serves on).
    const rotating = await lockOutServers(url)
    expect(typeof rotating).toBe('function')
    await until(false, 1)
    expect(lines.some((l) => l.includes("the connection holding this server's serving lock ended"))).toBe(
      true,
    )
    expect(lines).toContain(
      'the store is being rotated (keys rotate-master): this server takes its serving lock again once it ends',
    )
    expect(lines.filter((l) => l.includes('waiting for it to end before serving'))).toHaveLength(1)
    await (rotating as () => Promise<void>)()
    await until(true, 1)
    expect(lines).toContain('the PostgreSQL store: this server holds its serving lock again')
    await second.release()
    await until(true, 0)
  }, 60_000)
})
