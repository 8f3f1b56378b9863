/**
 * The audit log under SIGKILL: a child process runs 64 writers (token create, then a read of it,
 * each call with its own request id) on the file store and on PostgreSQL, and is killed after a
 * number of acknowledged calls. After the restart every acknowledged call has its entry (found by
 * its request id), no create entry names a token that is not there, and `tokenvault logs verify`'s
 * function passes for the tenant. A second run on each has its writers read only, so the entries of
 * reads, committed without a sync (file) or without waiting for the WAL flush (PostgreSQL), are
 * what the kill must not lose.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { postgresStore } from '../../adapters/postgres/index.js'
import { verifyStoreLogs } from '../../bin/logs.js'
import { createService, systemClock } from '../../entry/index.js'
import type { Store } from '../../src/store/contract.js'
import { closed, tempDir } from '../file/helpers.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from '../postgres/database.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const CHILD = fileURLToPath(new URL('./kill-child.ts', import.meta.url))
const masterKey = randomBytes(32)
/** Kills per store, and acknowledged calls before each kill (the child is killed past this many). */
const KILLS = 3
const ACKS = 200

/** A tenant and a key that creates and reads tokens, made in `store` (closed after). */
async function prepare(store: Store): Promise<{ tenantId: string; key: string }> {
  const service = createService({ store, clock: systemClock, masterKey, runner: null })
  const tenant = await service.admin.createTenant({ name: 'killed' })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'writer',
    type: 'private',
    permissions: ['token:create', 'token:read'],
  })
  await service.close()
  return { tenantId: tenant.id, key }
}

/** Runs the child on `args` and SIGKILLs it once ACKS calls were acknowledged: the request ids acknowledged. */
async function runAndKill(args: string[]): Promise<Map<string, string>> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const acked = new Map<string, string>()
  let buffered = ''
  let stderr = ''
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString()
    const lines = buffered.split('\n')
    buffered = lines.pop() ?? ''
    for (const line of lines) {
      const [word, requestId, tokenId] = line.split(' ')
      if (word === 'ack') acked.set(requestId!, tokenId!)
    }
    if (acked.size >= ACKS) child.kill('SIGKILL')
  })
  await closed(child)
  if (child.signalCode !== 'SIGKILL') throw new Error(`child exited by itself (${child.exitCode}): ${stderr}`)
  return acked
}

/** Every acknowledged call has its entry; no create entry names a token the store lacks. */
async function check(store: Store, tenantId: string, acked: Map<string, string>) {
  const entries = await store.listLogs(tenantId, { order: 'chain', limit: 1_000_000 })
  const logged = new Set(entries.map((e) => e.request_id))
  const missing = [...acked.keys()].filter((id) => !logged.has(id))
  expect(missing, 'acknowledged calls without their entry').toEqual([])
  const tokens = new Set((await store.dump()).tokens.map((t) => t.id))
  const ghosts = entries.filter((e) => e.operation === 'create' && e.entity_type === 'token')
  expect(ghosts.filter((e) => !tokens.has(e.entity_id!)).map((e) => e.id)).toEqual([])
}

describe('audit log under SIGKILL: file store', () => {
  it(`keeps the entry of every call acknowledged to 64 writers across ${KILLS} kills, and verifies`, async () => {
    const dir = await tempDir()
    const opened = await fileStore({ path: dir })
    const { tenantId, key } = await prepare(opened)
    const acked = new Map<string, string>()
    for (let kill = 0; kill < KILLS; kill++) {
      for (const [r, t] of await runAndKill(['file', dir, masterKey.toString('hex'), key])) acked.set(r, t)
      const store = await fileStore({ path: dir })
      try {
        await check(store, tenantId, acked)
      } finally {
        await store.close()
      }
    }
    const [verified] = await verifyStoreLogs({ store: `file:${dir}`, masterKey, tenant: tenantId })
    expect(verified!.result).toMatchObject({ ok: true })
  }, 180_000)

  // Reads only: their entries are committed without a sync (what the OS holds outlives the kill).
  it(`keeps the entry of every read acknowledged to 64 readers across ${KILLS} kills, and verifies`, async () => {
    const dir = await tempDir()
    const opened = await fileStore({ path: dir })
    const { tenantId, key } = await prepare(opened)
    const acked = new Map<string, string>()
    for (let kill = 0; kill < KILLS; kill++) {
      for (const [r, t] of await runAndKill(['file', dir, masterKey.toString('hex'), key, 'reads']))
        acked.set(r, t)
      const store = await fileStore({ path: dir })
      try {
        await check(store, tenantId, acked)
      } finally {
        await store.close()
      }
    }
    const [verified] = await verifyStoreLogs({ store: `file:${dir}`, masterKey, tenant: tenantId })
    expect(verified!.result).toMatchObject({ ok: true })
  }, 180_000)
})

describePostgres('audit log under SIGKILL: PostgreSQL', (url) => {
  const pool = testPool(url)
  const schemas: string[] = []
  afterAll(async () => {
    await dropSchemas(pool, schemas)
    await pool.end()
  })

  it(`keeps the entry of every call acknowledged to 64 writers across ${KILLS} kills, and verifies`, async () => {
    const schema = freshSchema()
    schemas.push(schema)
    const { tenantId, key } = await prepare(await postgresStore({ connectionString: url, schema }))
    const acked = new Map<string, string>()
    for (let kill = 0; kill < KILLS; kill++) {
      for (const [r, t] of await runAndKill(['postgres', url, schema, masterKey.toString('hex'), key]))
        acked.set(r, t)
      const store = await postgresStore({ connectionString: url, schema })
      try {
        await check(store, tenantId, acked)
      } finally {
        await store.close()
      }
    }
    const store = await postgresStore({ connectionString: url, schema })
    const service = createService({ store, clock: systemClock, masterKey, runner: null })
    expect(await service.admin.verifyLogs({ tenantId })).toMatchObject({ ok: true })
    await service.close()
  }, 180_000)

  // Reads only: their entries commit with synchronous_commit off (the server holds them).
  it(`keeps the entry of every read acknowledged to 64 readers across ${KILLS} kills, and verifies`, async () => {
    const schema = freshSchema()
    schemas.push(schema)
    const { tenantId, key } = await prepare(await postgresStore({ connectionString: url, schema }))
    const acked = new Map<string, string>()
    for (let kill = 0; kill < KILLS; kill++) {
      const args = ['postgres', url, schema, masterKey.toString('hex'), key, 'reads']
      for (const [r, t] of await runAndKill(args)) acked.set(r, t)
      const store = await postgresStore({ connectionString: url, schema })
      try {
        await check(store, tenantId, acked)
      } finally {
        await store.close()
      }
    }
    const store = await postgresStore({ connectionString: url, schema })
    const service = createService({ store, clock: systemClock, masterKey, runner: null })
    expect(await service.admin.verifyLogs({ tenantId })).toMatchObject({ ok: true })
    await service.close()
  }, 180_000)
})
