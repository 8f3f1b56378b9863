import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import pg from 'pg'
import { afterAll, expect, it } from 'vitest'
import { callJson, describePostgres } from './database.js'

const root = new URL('../../', import.meta.url)
const children: ChildProcess[] = []

/** Starts `tokenvault serve` on a free port over `store`; resolves with its URL and printed lines. */
async function serve(store: string) {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'bin/tokenvault.ts', 'serve', '--port', '0', '--store', store],
    {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  children.push(child)
  let stderr = ''
  child.stderr!.on('data', (d) => {
    stderr += d
  })
  const lines: string[] = []
  const reader = createInterface({ input: child.stdout! })
  // The start lines end with `docs: …`, after the management key when there is one.
  const started = new Promise<void>((resolve, reject) => {
    reader.on('line', (line) => {
      lines.push(line)
      if (line.startsWith('docs: ')) resolve()
    })
    child.on('exit', () => reject(new Error(`the server exited: ${stderr}`)))
  })
  await started
  const url = lines.find((l) => l.startsWith('listening on '))!.slice('listening on '.length)
  return { child, url, lines }
}

afterAll(async () => {
  for (const child of children) {
    if (child.exitCode === null) {
      child.kill('SIGTERM')
      await once(child, 'exit')
    }
  }
})

describePostgres('two CLI servers over one Postgres database', (url) => {
  it('a token created through one is read through the other; a session created on one is authorized on the other; a narrowed or deleted application is refused by the other within 1 s', async () => {
    const database = `tv_cli_${randomBytes(5).toString('hex')}`
    const admin = new pg.Client({ connectionString: url })
    await admin.connect()
    await admin.query(`CREATE DATABASE ${database}`)
    const dbUrl = new URL(url)
    dbUrl.pathname = `/${database}`
    try {
      const one = await serve(dbUrl.toString())
      const managementKey = one.lines
        .find((l) => l.startsWith('management key: '))
        ?.slice('management key: '.length)
      expect(managementKey).toMatch(/^key_/)
      const two = await serve(dbUrl.toString())
      expect(two.lines.some((l) => l.startsWith('management key: '))).toBe(false)

      const call = callJson
      const perms = ['token:create', 'token:read']
      const priv = await call(one.url, 'POST', '/applications', managementKey!, {
        name: 'srv',
        type: 'private',
        permissions: perms,
        rules: [{ description: 'all', priority: 1, container: '/', transform: 'reveal', permissions: perms }],
      })
      expect(priv.status).toBe(201)
      const created = await call(one.url, 'POST', '/tokens', priv.body.key, {
        type: 'token',
        data: 'through one',
      })
      expect(created.status).toBe(201)
      const read = await call(two.url, 'GET', `/tokens/${created.body.id}`, priv.body.key)
      expect(read).toMatchObject({ status: 200, body: { data: 'through one' } })

      const pub = await call(two.url, 'POST', '/applications', managementKey!, {
        name: 'web',
        type: 'public',
        permissions: ['token:create'],
      })
      const session = await call(one.url, 'POST', '/sessions', pub.body.key)
      expect(session.status).toBe(201)
      const authorized = await call(two.url, 'POST', '/sessions/authorize', priv.body.key, {
        nonce: session.body.nonce,
        permissions: ['token:read'],
      })
      expect(authorized.status).toBe(200)
      const again = await call(one.url, 'POST', '/sessions/authorize', priv.body.key, {
        nonce: session.body.nonce,
        permissions: ['token:read'],
      })
      expect(again.status).toBe(409)
      const viaSession = await call(one.url, 'GET', `/tokens/${created.body.id}`, session.body.session_key)
      expect(viaSession.status).toBe(200)

      // Revocation through one server takes effect in the other (which has the key cached): within
      // the key cache's lifetime (500 ms, pinned by key-cache-ttl.test.ts with its time driven by
      // hand), waited for here with room for a busy machine, whose requests alone can take a second.
      const within = async (ms: number, holds: () => Promise<boolean>) => {
        const started = performance.now()
        while (!(await holds())) {
          if (performance.now() - started > ms) throw new Error(`not within ${ms} ms`)
          await new Promise((resolve) => setTimeout(resolve, 25))
        }
      }
      expect((await call(two.url, 'GET', `/tokens/${created.body.id}`, priv.body.key)).status).toBe(200)
      const narrowed = await call(one.url, 'PUT', `/applications/${priv.body.id}`, managementKey!, {
        name: 'srv',
        permissions: ['token:create'],
      })
      expect(narrowed.status).toBe(200)
      await within(
        20_000,
        async () => (await call(two.url, 'GET', `/tokens/${created.body.id}`, priv.body.key)).status === 403,
      )
      expect((await call(one.url, 'DELETE', `/applications/${priv.body.id}`, managementKey!)).status).toBe(
        204,
      )
      await within(
        20_000,
        async () =>
          (await call(two.url, 'POST', '/tokens', priv.body.key, { type: 'token', data: 'x' })).status ===
          401,
      )
    } finally {
      for (const child of children.splice(0)) {
        if (child.exitCode === null) {
          child.kill('SIGTERM')
          await once(child, 'exit')
        }
      }
      await admin.query(`DROP DATABASE IF EXISTS ${database}`)
      await admin.end()
    }
  }, 180_000)
})
