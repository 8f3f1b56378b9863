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
    const served = await openStore(url, { serving: true })
    await until(true, 1)
    expect(await lockOutServers(url)).toEqual({ holders: 1 })
    const dir = await tempDir()
    writeFileSync(join(dir, '.tokenvault.key'), randomBytes(32).toString('base64'), { mode: 0o600 })
    const cli = start(['keys', 'rotate-master', '--store', url], dir)
    const [code] = await cli.exited
    expect(code).toBe(2)
    expect(cli.stderr()).toContain('is served by 1 server(s): stop every server on it')
    await served.release()
    await until(true, 0)

    const release = await lockOutServers(url)
    expect(typeof release).toBe('function')
    const next = await openStore(url, { serving: true })
    await until(false, 1)
    await (release as () => Promise<void>)()
    await until(true, 1)
    await until(false, 0)
    await next.release()
    await until(true, 0)
  }, 60_000)
})
