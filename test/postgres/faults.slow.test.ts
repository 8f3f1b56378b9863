import { execFile, execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { promisify } from 'node:util'
import pg from 'pg'
import { afterAll, expect, it, vi } from 'vitest'
import { serve } from '../../bin/serve.js'
import { callJson, describePostgres } from './database.js'

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
      heavyLane: false,
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
      // On a busy machine the five kills can come and go within ten calls: the load goes on until it
      // has made more than ten (bounded: if calls stop answering, this fails).
      await vi.waitFor(() => expect(statuses.length).toBeGreaterThan(10), { timeout: 30_000, interval: 20 })
      stop = true
      await load
      expect(statuses.filter((s) => s !== 200 && s !== 503)).toEqual([])
      // The faults were felt (queries killed mid-flight answer 503), not missed by a quiet pool.
      expect(statuses).toContain(503)
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
  }, 120_000)

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

  it('survives pg_ctl restart under load: 503 meanwhile, every acknowledged create readable after', async () => {
    // A private server of its own: restarting the shared one would disturb other test files.
    const script = new URL('../../scripts/pg-test-server.sh', import.meta.url).pathname
    const env = execFileSync('bash', [script, 'start'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    })
    const own = Object.fromEntries([...env.matchAll(/^export (\w+)=(.*)$/gm)].map((m) => [m[1], m[2]]))
    const dir = own['TOKENVAULT_PG_DIR']!
    const printed: string[] = []
    const server = await serve({
      port: 0,
      host: '127.0.0.1',
      store: own['TOKENVAULT_PG_URL']!,
      heavyLane: false,
      headerPrefix: 'SVC',
      masterKey: Buffer.alloc(32, 2),
      print: (line) => printed.push(line),
      log: () => {},
    })
    try {
      const management = printed
        .find((l) => l.startsWith('management key: '))!
        .slice('management key: '.length)
      const call = (method: string, path: string, key: string, body?: unknown) =>
        callJson(server.url, method, path, key, body)
      const perms = ['token:create', 'token:read']
      const app = await call('POST', '/applications', management, {
        name: 'load',
        type: 'private',
        permissions: perms,
        rules: [
          {
            description: 'all',
            priority: 1,
            container: '/general/',
            transform: 'reveal',
            permissions: perms,
          },
        ],
      })
      expect(app.status).toBe(201)
      const key = app.body.key as string
      const acknowledged: string[] = []
      const statuses: number[] = []
      let stop = false
      /** Resolves once `n` creates in all have been acknowledged. */
      const waits: { n: number; resolve: () => void }[] = []
      const acked = (n: number) => new Promise<void>((resolve) => waits.push({ n, resolve }))
      const load = Promise.all(
        Array.from({ length: 8 }, async (_, worker) => {
          for (let i = 0; !stop; i++) {
            const created = await call('POST', '/tokens', key, { type: 'token', data: `w${worker}-${i}` })
            statuses.push(created.status)
            if (created.status === 201) acknowledged.push(created.body.id)
            for (const w of waits.filter((w) => acknowledged.length >= w.n)) w.resolve()
          }
        }),
      )
      // Each restart comes after 10 more creates were acknowledged, and the load stops 10 after the last.
      for (let i = 0; i < 2; i++) {
        await acked(acknowledged.length + 10)
        // Asynchronously, so the load goes on (and meets the database down) while it restarts.
        await promisify(execFile)('bash', [script, 'restart', dir])
      }
      await acked(acknowledged.length + 10)
      stop = true
      await load
      expect(statuses.filter((s) => s !== 201 && s !== 503)).toEqual([])
      // The restarts were felt: some creates met the database down and answered 503.
      expect(statuses).toContain(503)
      expect(acknowledged.length).toBeGreaterThan(20)
      let last = 0
      for (let i = 0; i < 50 && last !== 201; i++) {
        last = (await call('POST', '/tokens', key, { type: 'token', data: 'after' })).status
        if (last !== 201) await new Promise((resolve) => setTimeout(resolve, 100))
      }
      expect(last).toBe(201)
      const lost: string[] = []
      for (const id of acknowledged)
        if ((await call('GET', `/tokens/${id}`, key)).status !== 200) lost.push(id)
      expect(lost).toEqual([])
    } finally {
      await server.close()
      execFileSync('bash', [script, 'stop', dir], { stdio: 'ignore' })
    }
  }, 90_000)
})
