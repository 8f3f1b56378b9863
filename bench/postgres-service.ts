/**
 * The service over the Postgres store, against what PostgreSQL does through raw `pg` on the same
 * machine: one tenant's token creates at 1, 16 and 64 callers (floor: a plain INSERT of the same
 * size per call), token gets by key (floor: the same point SELECT), and two CLI server processes
 * over one database against one. Run through `bench/postgres.bench.ts`.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { postgresStore } from '../adapters/postgres/index.js'
import { createService, systemClock } from '../src/index.js'
import type { BenchOptions, BenchRow } from './harness.js'
import { inFlight } from './harness.js'

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
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** Alternating rounds of `ours` and `floor`; medians of each. */
async function rounds(
  ours: () => Promise<unknown>,
  floor: () => Promise<unknown>,
  callers: number,
  total: number,
  n: number,
) {
  const a: number[] = []
  const b: number[] = []
  await inFlight(ours, callers, Math.ceil(total / 4))
  await inFlight(floor, callers, Math.ceil(total / 4))
  for (let i = 0; i < n; i++) {
    a.push(await inFlight(ours, callers, total))
    b.push(await inFlight(floor, callers, total))
  }
  return { op: median(a), baseline: median(b) }
}

const row = (
  operation: string,
  baseline: string,
  r: { op: number; baseline: number },
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
  note,
})

/** Creates and gets through the in-process service, one tenant, against raw `pg`. */
export async function serviceRows(url: string, opts: BenchOptions): Promise<BenchRow[]> {
  const schema = `tv_bench_${randomBytes(6).toString('hex')}`
  const raw = new pg.Pool({ connectionString: url, max: 10 })
  const storePool = new pg.Pool({ connectionString: url, max: 10 })
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
    const create = async () => {
      const t = await client.tokens.create({ type: 'token', data: DATA })
      if (ids.length < 2000) ids.push(t.id)
    }
    let n = 0
    const insert = `INSERT INTO "${schema}".raw_tokens (tenant_id, id, doc) VALUES ($1, $2, $3::jsonb)`
    const rawCreate = () =>
      raw.query({
        name: 'raw_insert',
        text: insert,
        values: [tenant.id, `r${n++}`, JSON.stringify({ data: DATA, type: 'token' })],
      })
    const total = opts.quick ? 200 : 2000
    const r = opts.quick ? 1 : 5
    const rows: BenchRow[] = []
    const creates: Record<number, { op: number; baseline: number }> = {}
    for (const callers of [1, 16, 64]) {
      const m = await rounds(create, rawCreate, callers, callers === 1 ? total / 4 : total, r)
      creates[callers] = m
      rows.push(
        row(
          `token create through the service, one tenant, ${callers} caller${callers > 1 ? 's' : ''}`,
          'a plain INSERT of the same JSON through pg',
          m,
          callers === 16 ? '16 callers ≥ 5× one caller' : '',
          callers === 1
            ? ''
            : `${(m.op / creates[1]!.op).toFixed(1)}× one caller (the floor: ${(m.baseline / creates[1]!.baseline).toFixed(1)}×)`,
        ),
      )
    }
    let g = 0
    const get = () => client.tokens.get(ids[g++ % ids.length]!)
    const select = `SELECT doc::text AS doc FROM "${schema}".raw_tokens WHERE tenant_id = $1 AND id = $2`
    let h = 0
    const rawGet = async () => {
      const { rows: found } = await raw.query({
        name: 'raw_get',
        text: select,
        values: [tenant.id, `r${h++ % Math.min(n, 2000)}`],
      })
      return JSON.parse(found[0].doc)
    }
    for (const callers of [1, 16]) {
      const m = await rounds(get, rawGet, callers, callers === 1 ? total / 2 : total * 2, r)
      rows.push(
        row(
          `token get through the service (key checked), ${callers} caller${callers > 1 ? 's' : ''}`,
          'the same point SELECT through pg, JSON.parse',
          m,
          '≥ 80 % of the floor (≤ 1.25×)',
          `${((m.op / m.baseline) * 100).toFixed(0)} % of the floor`,
        ),
      )
    }
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
  const built = fileURLToPath(new URL('../dist/bin/tokenvault.js', import.meta.url))
  const args = existsSync(built)
    ? [built]
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
    const total = opts.quick ? 300 : 3000
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
      const m = await rounds(both(f), f(one.port), 32, total, r)
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
