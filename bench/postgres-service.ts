/**
 * The service over the Postgres store, against what PostgreSQL does through raw `pg` on the same
 * machine, on pools of the same size (16 connections each), in one run: one tenant's token creates
 * at 1 and 16 callers, with identical data (one fingerprint, the same test card tokenized by every
 * caller) and with different data (floor: a plain INSERT of the same JSON per call); token gets by
 * key (floor: the same point SELECT plus one AES-256-GCM decryption of a sealed copy of the data);
 * and two CLI server processes over one database against one. Run through `bench/postgres.bench.ts`.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { built, builtPostgres } from './built.js'
import type { BenchOptions, BenchRow } from './harness.js'

const PERMS = ['token:create', 'token:read'] as const
const RULES = [
  {
    description: 'all',
    priority: 1,
    container: '/general/',
    transform: 'reveal' as const,
    permissions: [...PERMS],
  },
]
const DATA = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' }
/** Connections of every pool here, the store's and the floor's alike. */
const POOL = 16
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/**
 * Calls `fn` with `callers` in flight for about `ms`; answers calls per second and this process's
 * CPU time per call (µs: what the caller's side costs, apart from the database).
 */
async function forMs(fn: () => Promise<unknown>, callers: number, ms: number) {
  let done = 0
  const start = performance.now()
  const cpu = process.cpuUsage()
  const end = start + ms
  const worker = async () => {
    while (performance.now() < end) {
      await fn()
      done++
    }
  }
  await Promise.all(Array.from({ length: callers }, worker))
  const used = process.cpuUsage(cpu)
  return { rate: (done * 1000) / (performance.now() - start), cpu: (used.user + used.system) / done }
}

/** Alternating rounds of `ours` and `floor`, `ms` each after a short warm-up; medians of each. */
async function rounds(
  ours: () => Promise<unknown>,
  floor: () => Promise<unknown>,
  callers: number,
  ms: number,
  n: number,
) {
  const a: Array<{ rate: number; cpu: number }> = []
  const b: Array<{ rate: number; cpu: number }> = []
  await forMs(ours, callers, ms / 4)
  await forMs(floor, callers, ms / 4)
  for (let i = 0; i < n; i++) {
    a.push(await forMs(ours, callers, ms))
    b.push(await forMs(floor, callers, ms))
  }
  const cpu = `process CPU per call ${median(a.map((x) => x.cpu)).toFixed(0)} µs (the floor's ${median(b.map((x) => x.cpu)).toFixed(0)} µs)`
  return { op: median(a.map((x) => x.rate)), baseline: median(b.map((x) => x.rate)), cpu }
}

const row = (
  operation: string,
  baseline: string,
  r: { op: number; baseline: number; cpu?: string },
  goal: string,
  note: string,
): BenchRow => ({
  group: 'postgres service',
  operation,
  opsPerSec: r.op,
  baseline,
  baselineOpsPerSec: r.baseline,
  ratio: r.baseline / r.op,
  goal,
  note: r.cpu ? `${note}; ${r.cpu}` : note,
})

const pct = (x: number) => `${(x * 100).toFixed(0)} %`

/** Creates and gets through the in-process service, one tenant, against raw `pg`. */
export async function serviceRows(url: string, opts: BenchOptions): Promise<BenchRow[]> {
  const schema = `tv_bench_${randomBytes(6).toString('hex')}`
  const raw = new pg.Pool({ connectionString: url, max: POOL })
  const storePool = new pg.Pool({ connectionString: url, max: POOL })
  // The package as an application runs it: the built one (see `bench/built.ts`).
  const {
    entry: { createService, systemClock },
  } = await built()
  const { postgresStore } = await builtPostgres()
  const service = createService({
    store: await postgresStore({ pool: storePool, schema }),
    masterKey: randomBytes(32),
    clock: systemClock,
    runner: null,
  })
  try {
    await raw.query(
      `CREATE TABLE "${schema}".raw_tokens (tenant_id text, id text, doc jsonb, PRIMARY KEY (tenant_id, id))`,
    )
    const tenant = await service.admin.createTenant({ name: 'bench' })
    const { key } = await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'bench',
      type: 'private',
      permissions: [...PERMS],
      rules: RULES,
    })
    const client = service.connect(key)
    const ids: string[] = []
    let d = 0
    /** Identical data: every call tokenizes the same card. Different: each its own number. */
    const dataOf = (same: boolean) => (same ? DATA : { ...DATA, number: `4${String(d++).padStart(15, '0')}` })
    const create = (same: boolean) => async () => {
      const t = await client.tokens.create({ type: 'token', data: dataOf(same) })
      if (ids.length < 2000) ids.push(t.id)
    }
    let n = 0
    const insert = `INSERT INTO "${schema}".raw_tokens (tenant_id, id, doc) VALUES ($1, $2, $3::jsonb)`
    const rawCreate = (same: boolean) => () =>
      raw.query({
        name: 'raw_insert',
        text: insert,
        values: [tenant.id, `r${n++}`, JSON.stringify({ data: dataOf(same), type: 'token' })],
      })
    const ms = opts.quick ? 300 : 2000
    const r = opts.quick ? 1 : 3
    const rows: BenchRow[] = []
    const one = await rounds(create(true), rawCreate(true), 1, ms, r)
    rows.push(
      row(
        'token create through the service, one tenant, 1 caller',
        'a plain INSERT of the same JSON through pg',
        one,
        '≥ 60 % of the floor',
        `${pct(one.op / one.baseline)} of the floor`,
      ),
    )
    for (const same of [true, false]) {
      const m = await rounds(create(same), rawCreate(same), 16, ms, r)
      rows.push(
        row(
          `token create through the service, one tenant, 16 callers, ${same ? 'identical' : 'different'} data`,
          'a plain INSERT of the same JSON through pg, 16 callers',
          m,
          '≥ 3× one caller; ≥ 60 % of the floor',
          `${(m.op / one.op).toFixed(1)}× one caller (the floor: ${(m.baseline / one.baseline).toFixed(1)}×); ${pct(m.op / m.baseline)} of the floor`,
        ),
      )
    }
    // The second floor: PostgreSQL writing the rows a create must, in one statement through pg (no
    // service, no locks, no guards): the token's row as the store keeps it (with its indexes), its
    // container's term row and its tenant's count, the stored doc of one of our tokens with a new id.
    const storedDoc = (
      await raw.query(`SELECT doc::text AS doc FROM "${schema}".tokens WHERE tenant_id = $1 LIMIT 1`, [
        tenant.id,
      ])
    ).rows[0].doc as string
    const sameRows = `WITH token AS (
        INSERT INTO "${schema}".tokens (tenant_id, id, type, expires_at, doc) VALUES ($1, $2, 'token', NULL, $3::jsonb)),
      term AS (
        INSERT INTO "${schema}".token_terms (tenant_id, kind, name, value, id) VALUES ($1, 'container', '', $4, $2)),
      count AS (
        INSERT INTO "${schema}".token_counts AS c (tenant_id, shard, n) VALUES ($1, pg_backend_pid() % 16, 1)
        ON CONFLICT (tenant_id, shard) DO UPDATE SET n = c.n + 1)
      SELECT 1`
    const container = (JSON.parse(storedDoc) as { containers: string[] }).containers[0]!
    let w = 0
    const rowsCreate = () => {
      const id = `w${w++}`
      const doc = storedDoc.replace(/"id": ?"[^"]*"/, `"id": "${id}"`)
      return raw.query({ name: 'same_rows', text: sameRows, values: ['floor-tenant', id, doc, container] })
    }
    for (const callers of [1, 16]) {
      const m = await rounds(create(false), rowsCreate, callers, ms, r)
      rows.push(
        row(
          `token create through the service against the rows it writes, one tenant, ${callers} caller${callers === 1 ? '' : 's'}`,
          'the rows a create writes (token with its indexes, its container term, its count) in one statement through pg',
          m,
          '—',
          `${pct(m.op / m.baseline)} of this floor`,
        ),
      )
    }
    // The get floor: the same point SELECT, JSON.parse, and one AES-256-GCM opening of sealed data.
    const dataKey = randomBytes(32)
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', dataKey, iv)
    const sealed = Buffer.concat([cipher.update(JSON.stringify(DATA)), cipher.final()])
    const tag = cipher.getAuthTag()
    const sealedDoc = JSON.stringify({
      type: 'token',
      data: { iv: iv.toString('base64'), tag: tag.toString('base64'), sealed: sealed.toString('base64') },
    })
    const stored = Array.from({ length: 2000 }, (_, i) => `g${i}`)
    for (const id of stored) await raw.query(insert, [tenant.id, id, sealedDoc])
    let g = 0
    const get = () => client.tokens.get(ids[g++ % ids.length]!)
    const select = `SELECT doc::text AS doc FROM "${schema}".raw_tokens WHERE tenant_id = $1 AND id = $2`
    let h = 0
    const rawGet = async () => {
      const { rows: found } = await raw.query({
        name: 'raw_get',
        text: select,
        values: [tenant.id, stored[h++ % stored.length]],
      })
      const doc = JSON.parse(found[0].doc)
      const decipher = createDecipheriv('aes-256-gcm', dataKey, Buffer.from(doc.data.iv, 'base64'))
      decipher.setAuthTag(Buffer.from(doc.data.tag, 'base64'))
      const plain = Buffer.concat([decipher.update(Buffer.from(doc.data.sealed, 'base64')), decipher.final()])
      return { ...doc, data: JSON.parse(plain.toString('utf8')) }
    }
    const m = await rounds(get, rawGet, 1, ms, r)
    rows.push(
      row(
        'token get through the service (key checked), 1 caller',
        'the same point SELECT through pg, JSON.parse, one AES-256-GCM decryption',
        m,
        '≥ 80 % of the floor',
        `${pct(m.op / m.baseline)} of the floor`,
      ),
    )
    return rows
  } finally {
    await service.close()
    await raw.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {})
    await raw.end()
    await storePool.end()
  }
}

const MANAGEMENT_KEY = `key_${randomBytes(24).toString('base64url')}`

/** Starts `tokenvault serve` over `store` (from dist/ when built); resolves with its port. */
async function server(store: string, children: ChildProcess[]): Promise<number> {
  const bin = fileURLToPath(new URL('../dist/bin/tokenvault.js', import.meta.url))
  const args = existsSync(bin)
    ? [bin]
    : ['--import', 'tsx', fileURLToPath(new URL('../bin/tokenvault.ts', import.meta.url))]
  const flags = [
    'serve',
    '--port',
    '0',
    '--store',
    store,
    '--log',
    'none',
    '--management-key',
    MANAGEMENT_KEY,
  ]
  const child = spawn(process.execPath, [...args, ...flags], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, TOKENVAULT_MASTER_KEY: Buffer.alloc(32, 7).toString('base64') },
  })
  children.push(child)
  for await (const line of createInterface({ input: child.stdout! })) {
    if (line.startsWith('listening on ')) return Number(new URL(line.slice('listening on '.length)).port)
  }
  throw new Error('the CLI server exited before listening')
}

/** One HTTP call on a keep-alive agent; resolves with the status and body. */
function call(agent: Agent, port: number, method: string, path: string, key: string, body?: unknown) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body)
    const req = request(
      {
        agent,
        host: 'localhost',
        port,
        method,
        path,
        headers: { 'svc-api-key': key, 'content-type': 'application/json' },
      },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (d) => (text += d))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }))
      },
    )
    req.on('error', reject)
    req.end(payload)
  })
}

/** Two CLI servers over one database against one, at 32 connections spread over them. */
export async function processRows(url: string, opts: BenchOptions): Promise<BenchRow[]> {
  const database = `tv_bench_${randomBytes(4).toString('hex')}`
  const admin = new pg.Client({ connectionString: url })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${database}`)
  const dbUrl = new URL(url)
  dbUrl.pathname = `/${database}`
  const children: ChildProcess[] = []
  const agent = new Agent({ keepAlive: true, maxSockets: 64 })
  try {
    const one = { port: await server(dbUrl.href, children) }
    const two = { port: await server(dbUrl.href, children) }
    const management = MANAGEMENT_KEY
    const app = await call(agent, one.port, 'POST', '/applications', management, {
      name: 'bench',
      type: 'private',
      permissions: [...PERMS],
      rules: RULES,
    })
    const key = JSON.parse(app.body).key as string
    const ids: string[] = []
    const create = (port: number) => async () => {
      const r = await call(agent, port, 'POST', '/tokens', key, { type: 'token', data: DATA })
      if (r.status !== 201) throw new Error(`create answered ${r.status}`)
      if (ids.length < 2000) ids.push(JSON.parse(r.body).id)
    }
    let g = 0
    const get = (port: number) => async () => {
      const r = await call(agent, port, 'GET', `/tokens/${ids[g++ % ids.length]}`, key)
      if (r.status !== 200) throw new Error(`get answered ${r.status}`)
    }
    const ms = opts.quick ? 300 : 2000
    const r = opts.quick ? 1 : 3
    const both = (f: (port: number) => () => Promise<void>) => {
      const a = f(one.port)
      const b = f(two.port)
      let i = 0
      return () => (i++ % 2 === 0 ? a() : b())
    }
    const rows: BenchRow[] = []
    for (const [name, f] of [
      ['token create over HTTP', create],
      ['token get over HTTP', get],
    ] as const) {
      const m = await rounds(both(f), f(one.port), 32, ms, r)
      rows.push(
        row(
          `${name}, two CLI server processes, 32 connections`,
          'one CLI server process, 32 connections',
          m,
          '≥ 1.6× one process (with spare cores)',
          `${(m.op / m.baseline).toFixed(2)}× one process`,
        ),
      )
    }
    return rows
  } finally {
    agent.destroy()
    for (const child of children) child.kill('SIGTERM')
    await new Promise((resolve) => setTimeout(resolve, 500))
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => {})
    await admin.end()
  }
}
