import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, statSync, symlinkSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, describe, expect, it, onTestFailed } from 'vitest'
import { root, start } from '../cli/spawn.js'
import { itNeeds } from '../environment.js'
import { PG_URL } from '../postgres/database.js'

/**
 * Encryption at rest, tried from outside: a card number and a recognisable secret go into token
 * `data` and `mask`, and an API key into a reactor's configuration, through the CLI server; then every file of the data directory, and a `pg_dump`
 * of the database, are searched for them (and for their base64). A restart reads them back.
 */
const CARD = '4111111111111111'
const SECRET = `s3cr3t-${randomBytes(6).toString('hex')}`
const MASK_SECRET = `m4sk-${randomBytes(6).toString('hex')}`
/** A third party's API key in a reactor's configuration: sealed at rest like token data. */
const CONFIG_SECRET = `sk_live_${randomBytes(6).toString('hex')}`
/**
 * Each test starts the CLI from source twice and a reactor's sandbox once; on CI's loaded run (two
 * busy loops, two workers on two cores) the PostgreSQL one took over 60 s, against 5 s alone.
 */
const AT_REST_TIMEOUT = 180_000

/** Marks a test's steps with their time; a failed (or timed out) test prints how far it got. */
function stepsPrintedOnFailure() {
  const begun = performance.now()
  const marks: string[] = []
  onTestFailed(() => console.error(`at-rest steps: ${marks.join(', ') || 'none'}`))
  return (step: string) => marks.push(`${step} at ${Math.round(performance.now() - begun)} ms`)
}

/** Starts `tokenvault serve` on `store` in `cwd`; answers its URL once it listens. */
async function serve(store: string, cwd: string, env: Record<string, string> = {}) {
  // Run from sources, the sandbox worker loads tsx from the working directory's node_modules.
  if (!existsSync(join(cwd, 'node_modules')))
    symlinkSync(join(root, 'node_modules'), join(cwd, 'node_modules'))
  const cli = start(['serve', '--port', '0', '--store', store], cwd, env)
  const url = (await cli.line(1)).slice('listening on '.length)
  const stop = async () => {
    cli.child.kill('SIGTERM')
    await cli.exited
    return cli.stderr()
  }
  return { url, stop, lines: cli.lines, first: cli.line }
}

async function plant(url: string, management: string) {
  const call = async (path: string, key: string, body?: unknown) => {
    const response = await fetch(`${url}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'svc-api-key': key, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    return { status: response.status, body: (await response.json()) as Record<string, unknown> }
  }
  const app = await call('/applications', management, {
    name: 'backend',
    type: 'private',
    permissions: ['token:create', 'token:read', 'token:search', 'token:use'],
    rules: [
      {
        description: 'all',
        priority: 1,
        container: '/general/',
        transform: 'reveal',
        permissions: ['token:read', 'token:create', 'token:search'],
      },
    ],
  })
  expect(app.status).toBe(201)
  const key = app.body['key'] as string
  const made = await call('/tokens', key, {
    type: 'token',
    containers: ['/general/high/'],
    data: { number: CARD, note: SECRET },
    mask: { hint: MASK_SECRET },
    // Search indexes are kept as keyed hashes only: their values must not be found either.
    search_indexes: ['{{ data.note | upcase }}'],
  })
  expect(made.status).toBe(201)
  const formula = await call('/reactor-formulas', management, {
    name: 'vendor',
    type: 'private',
    code: 'module.exports = async function (req) { return { raw: { key: req.configuration.vendor_key } } }',
    configuration: [{ name: 'vendor_key', type: 'string' }],
    request_parameters: [],
  })
  expect(formula.status).toBe(201)
  const reactor = await call('/reactors', management, {
    name: 'vendor',
    formula: { id: formula.body['id'] },
    configuration: { vendor_key: CONFIG_SECRET },
  })
  expect(reactor.status).toBe(201)
  return { key, id: made.body['id'] as string, reactor: reactor.body['id'] as string, call }
}

/** What a react of the planted reactor answers: its formula echoes the configuration's API key. */
async function reactWith(url: string, key: string, reactor: string): Promise<unknown> {
  const response = await fetch(`${url}/reactors/${reactor}/react`, {
    method: 'POST',
    headers: { 'svc-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ args: {} }),
  })
  const body = (await response.json()) as { raw: unknown }
  expect(response.status, JSON.stringify(body)).toBe(200)
  return body.raw
}

/** The ids a search for the planted search index value answers (it is stored only as a keyed hash). */
async function searchIndexed(url: string, key: string): Promise<string[]> {
  const found = await fetch(`${url}/tokens/search`, {
    method: 'POST',
    headers: { 'svc-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ query: `data:${SECRET.toUpperCase()}` }),
  })
  return ((await found.json()) as { data: Array<{ id: string }> }).data.map((t) => t.id)
}

/** Every form of the planted values an attacker could grep for. */
const needles = () =>
  [CARD, SECRET, MASK_SECRET, SECRET.toUpperCase(), CONFIG_SECRET].flatMap((value) => [
    value,
    Buffer.from(value).toString('base64').slice(0, 12),
    Buffer.from(value).toString('hex'),
  ])

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? [path, ...filesUnder(path)] : [path]
  })
}

describe('encryption at rest through the CLI', () => {
  /**
   * Databases the tests made, dropped after them: a DROP DATABASE makes PostgreSQL take an immediate
   * checkpoint and wait for it (every dirty buffer of the server, written and synced), which the
   * other test files' writes can make last a minute on a loaded machine. Not a test's time.
   */
  const databases: string[] = []
  afterAll(async () => {
    if (databases.length === 0) return
    const admin = new pg.Pool({ connectionString: PG_URL, max: 1 })
    try {
      for (const name of databases) await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    } finally {
      await admin.end()
    }
  })

  it(
    'file store: no file holds the data, its mask or a reactor configuration, files are 0600 in 0700 dirs, a restart reads back',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'tokenvault-at-rest-'))
      try {
        const store = `file:${join(dir, 'vault')}`
        const first = await serve(store, dir)
        await first.first(2)
        const management = first.lines[1]!.slice('management key: '.length)
        const { key, id, reactor } = await plant(first.url, management)
        const log = await first.stop()
        const paths = filesUnder(join(dir, 'vault'))
        expect(paths.length).toBeGreaterThan(0)
        for (const path of paths) {
          const stat = statSync(path)
          expect((stat.mode & 0o777).toString(8), path).toBe(stat.isDirectory() ? '700' : '600')
          if (stat.isDirectory()) continue
          const bytes = readFileSync(path).toString('latin1')
          for (const needle of needles()) expect(bytes.includes(needle), `${needle} in ${path}`).toBe(false)
        }
        expect((statSync(join(dir, 'vault')).mode & 0o777).toString(8)).toBe('700')
        for (const needle of needles()) expect(log.includes(needle)).toBe(false)

        const second = await serve(store, dir)
        const read = await fetch(`${second.url}/tokens/${id}`, { headers: { 'svc-api-key': key } })
        expect(read.status).toBe(200)
        expect(((await read.json()) as { data: unknown }).data).toEqual({ number: CARD, note: SECRET })
        expect(await searchIndexed(second.url, key)).toEqual([id])
        expect(await reactWith(second.url, key, reactor)).toEqual({ key: CONFIG_SECRET })
        await second.stop()
      } finally {
        await rm(dir, { recursive: true, force: true })
      }
    },
    AT_REST_TIMEOUT,
  )

  itNeeds(
    PG_URL !== undefined,
    'a PostgreSQL database (TOKENVAULT_PG_URL)',
    'eval "$(scripts/pg-test-server.sh start)"',
  )(
    'PostgreSQL: a pg_dump holds neither the data, its mask nor a reactor configuration; a restart reads back',
    async () => {
      const step = stepsPrintedOnFailure()
      const database = `tv_at_rest_${randomBytes(4).toString('hex')}`
      const admin = new pg.Pool({ connectionString: PG_URL, max: 1 })
      await admin.query(`CREATE DATABASE ${database}`)
      databases.push(database)
      step('database created')
      const url = new URL(PG_URL!)
      url.pathname = `/${database}`
      const dir = await mkdtemp(join(tmpdir(), 'tokenvault-at-rest-pg-'))
      const env = { TOKENVAULT_MASTER_KEY: randomBytes(32).toString('base64') }
      try {
        const first = await serve(url.href, dir, env)
        await first.first(2)
        step('first server listening')
        const management = first.lines[1]!.slice('management key: '.length)
        const { key, id, reactor } = await plant(first.url, management)
        step('planted')
        await first.stop()
        step('first server stopped')
        const pgDump = ['/usr/lib/postgresql/15/bin/pg_dump', '/usr/bin/pg_dump'].find((p) => {
          try {
            return statSync(p).isFile()
          } catch {
            return false
          }
        })
        expect(pgDump, 'pg_dump is installed').toBeDefined()
        const dump = execFileSync(pgDump!, ['--dbname', url.href], {
          encoding: 'latin1',
          maxBuffer: 64 << 20,
        })
        step('dumped')
        expect(dump).toContain('$sealed')
        for (const needle of needles()) expect(dump.includes(needle), needle).toBe(false)

        const second = await serve(url.href, dir, env)
        step('second server listening')
        const read = await fetch(`${second.url}/tokens/${id}`, { headers: { 'svc-api-key': key } })
        expect(((await read.json()) as { data: unknown }).data).toEqual({ number: CARD, note: SECRET })
        expect(await searchIndexed(second.url, key)).toEqual([id])
        expect(await reactWith(second.url, key, reactor)).toEqual({ key: CONFIG_SECRET })
        step('read back')
        await second.stop()
        step('second server stopped')
      } finally {
        await rm(dir, { recursive: true, force: true })
        await admin.end()
      }
    },
    AT_REST_TIMEOUT,
  )
})
