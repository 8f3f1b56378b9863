import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { afterAll, expect, it } from 'vitest'
import { serve } from '../../bin/serve.js'
import { describePostgres } from './database.js'

/**
 * The CLI server over PostgreSQL when the database misbehaves: every backend of the vault
 * terminated (idle and under load), and a table locked longer than the statement timeout. The
 * process stays up, answers 503 (never 500, never a crash) while the database can't serve, and
 * 2xx again by itself.
 */
describePostgres('PostgreSQL faults under the CLI server', (url) => {
  const admin = new pg.Pool({ connectionString: url, max: 2 })
  const databases: string[] = []
  let database = ''
  let dbUrl = ''
  afterAll(async () => {
    for (const name of databases) await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await admin.end()
  })

  /** A CLI server over a fresh database of its own. */
  async function start() {
    database = `tv_faults_${randomBytes(4).toString('hex')}`
    await admin.query(`CREATE DATABASE ${database}`)
    databases.push(database)
    const u = new URL(url)
    u.pathname = `/${database}`
    dbUrl = u.href
    const printed: string[] = []
    const logs: string[] = []
    const server = await serve({
      port: 0,
      host: '127.0.0.1',
      store: dbUrl,
      headerPrefix: 'SVC',
      masterKey: Buffer.alloc(32, 1),
      print: (line) => printed.push(line),
      log: (line) => logs.push(line),
    })
    const management = printed.find((l) => l.startsWith('management key: '))?.slice('management key: '.length)
    return { server, management, logs }
  }

  const terminateAll = () =>
    admin.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
      [database],
    )

  it('survives terminated backends, idle and under load: 503 meanwhile, 2xx after', async () => {
    const { server, management } = await start()
    try {
      const key = management!
      const call = () =>
        fetch(`${server.url}/applications`, { headers: { 'svc-api-key': key } }).then((r) => r.status)
      expect(await call()).toBe(200)
      // Idle: every pooled connection is killed while nothing runs.
      await terminateAll()
      await new Promise((resolve) => setTimeout(resolve, 100))
      const afterIdle = await call()
      expect([200, 503]).toContain(afterIdle)
      // Under load: kill them again and again while requests run.
      const statuses: number[] = []
      let stop = false
      const load = Promise.all(
        Array.from({ length: 8 }, async () => {
          while (!stop) statuses.push(await call())
        }),
      )
      for (let i = 0; i < 5; i++) {
        await new Promise((resolve) => setTimeout(resolve, 60))
        await terminateAll()
      }
      stop = true
      await load
      expect(statuses.length).toBeGreaterThan(10)
      expect(statuses.filter((s) => s !== 200 && s !== 503)).toEqual([])
      // Recovered by itself.
      let last = 0
      for (let i = 0; i < 50 && last !== 200; i++) {
        last = await call()
        if (last !== 200) await new Promise((resolve) => setTimeout(resolve, 100))
      }
      expect(last).toBe(200)
    } finally {
      await server.close()
    }
  }, 60_000)

  it('a table locked longer than the statement timeout answers 503 within it; the lock gone, 2xx', async () => {
    const { server, management } = await start()
    try {
      const call = () =>
        fetch(`${server.url}/applications`, { headers: { 'svc-api-key': management! } }).then((r) => r.status)
      expect(await call()).toBe(200)
      // Lock the applications table of the vault's database from another session.
      const lockUrl = new URL(dbUrl)
      const lockPool = new pg.Pool({ connectionString: lockUrl.href, max: 1 })
      const lockClient = await lockPool.connect()
      await lockClient.query('BEGIN')
      await lockClient.query('LOCK TABLE applications IN ACCESS EXCLUSIVE MODE')
      const started = performance.now()
      const status = await call()
      const took = performance.now() - started
      await lockClient.query('ROLLBACK')
      lockClient.release()
      await lockPool.end()
      expect(status).toBe(503)
      expect(took).toBeLessThan(9000)
      expect(await call()).toBe(200)
    } finally {
      await server.close()
    }
  }, 60_000)
})
