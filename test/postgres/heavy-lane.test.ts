import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import pg from 'pg'
import { afterAll, expect, it } from 'vitest'
import { callJson, describePostgres } from './database.js'

const root = new URL('../../', import.meta.url)
const children: ChildProcess[] = []

afterAll(async () => {
  for (const child of children) {
    if (child.exitCode === null) {
      child.kill('SIGTERM')
      await once(child, 'exit')
    }
  }
})

/**
 * `tokenvault serve` over PostgreSQL with its heavy lane (bin/heavy-lane.ts): the lane's thread
 * opens the same database with a pool of its own, and answers a key reading large tokens many at
 * once with what the main thread answers.
 */
describePostgres('heavy lane over PostgreSQL', (url) => {
  it("answers a heavy key's reads on its thread, as the main thread does, over the same database", async () => {
    const database = `tv_lane_${randomBytes(5).toString('hex')}`
    const admin = new pg.Client({ connectionString: url })
    await admin.connect()
    await admin.query(`CREATE DATABASE ${database}`)
    const dbUrl = new URL(url)
    dbUrl.pathname = `/${database}`
    try {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', 'bin/tokenvault.ts', 'serve', '--port', '0', '--store', dbUrl.toString()],
        {
          cwd: root,
          stdio: ['ignore', 'pipe', 'pipe'],
          env: { ...process.env, TOKENVAULT_HEAVY_LANE: 'on' },
        },
      )
      children.push(child)
      let stderr = ''
      child.stderr!.on('data', (d) => {
        stderr += d
      })
      const lines: string[] = []
      await new Promise<void>((resolve, reject) => {
        createInterface({ input: child.stdout! }).on('line', (line) => {
          lines.push(line)
          if (line.startsWith('docs: ')) resolve()
        })
        child.on('exit', () => reject(new Error(`the server exited: ${stderr}`)))
      })
      const base = lines.find((l) => l.startsWith('listening on '))!.slice('listening on '.length)
      const management = lines.find((l) => l.startsWith('management key: '))!.slice('management key: '.length)
      const call = (method: string, path: string, key: string, body?: unknown) =>
        callJson(base, method, path, key, body)
      const permissions = ['token:create', 'token:read']
      const rules = [{ description: 'all', priority: 1, container: '/', transform: 'reveal', permissions }]
      const app = await call('POST', '/applications', management, {
        name: 'heavy',
        type: 'private',
        permissions,
        rules,
      })
      const key = app.body.key as string
      const big = await call('POST', '/tokens', key, { type: 'token', data: 'y'.repeat(60_000) })
      expect(big.status).toBe(201)
      const first = await call('GET', `/tokens/${big.body.id}`, key)
      const laneLines = () => stderr.split('\n').filter((l) => l.endsWith(' lane'))
      for (let round = 0; round < 40 && laneLines().length === 0; round++) {
        const answers = await Promise.all(
          Array.from({ length: 32 }, () => call('GET', `/tokens/${big.body.id}`, key)),
        )
        for (const a of answers) expect(a).toEqual(first)
      }
      expect(stderr).toContain('heavy lane: started')
      expect(laneLines().length).toBeGreaterThan(0)
      child.kill('SIGTERM')
      expect((await once(child, 'exit'))[0]).toBe(0)
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
      await admin.end()
    }
  }, 120_000)
})
