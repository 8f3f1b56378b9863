import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { createInterface, type Interface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import type pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import type { Store } from '../../src/store/contract.js'
import type { Op } from '../../src/store/index.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from './database.js'
import { raceSession, raceStaged, raceTransaction, T } from './race-records.js'

const WORKERS = 4
const ROUNDS = 100
const worker = fileURLToPath(new URL('./race-worker.ts', import.meta.url))

/** A racer process and the lines it prints, one at a time. */
interface Racer {
  child: ChildProcessWithoutNullStreams
  next(): Promise<string>
}

function startRacer(url: string, schema: string, name: string): Racer {
  const child = spawn(process.execPath, ['--import', 'tsx', worker, url, schema, name], { stdio: 'pipe' })
  let stderr = ''
  child.stderr.on('data', (chunk) => {
    stderr += chunk
  })
  const lines: Interface = createInterface({ input: child.stdout })
  const queue: string[] = []
  const waiting: Array<{ resolve: (line: string) => void; reject: (error: Error) => void }> = []
  lines.on('line', (line) => {
    const w = waiting.shift()
    if (w) w.resolve(line)
    else queue.push(line)
  })
  child.on('exit', (code) => {
    for (const w of waiting.splice(0)) w.reject(new Error(`racer ${name} exited with ${code}: ${stderr}`))
  })
  return {
    child,
    next: () => {
      const line = queue.shift()
      if (line !== undefined) return Promise.resolve(line)
      if (child.exitCode !== null) return Promise.reject(new Error(`racer ${name} exited: ${stderr}`))
      return new Promise((resolve, reject) => waiting.push({ resolve, reject }))
    },
  }
}

describePostgres('postgres store across processes', (url) => {
  let pool: pg.Pool
  let store: Store
  const racers: Racer[] = []
  const schema = freshSchema()
  beforeAll(async () => {
    pool = testPool(url)
    store = await postgresStore({ pool, schema })
  })
  afterAll(async () => {
    for (const r of racers) r.child.kill()
    await store?.close()
    await dropSchemas(pool, [schema])
    await pool.end()
  })

  it(`lets exactly one of ${WORKERS} processes authorize a nonce and commit a transaction, ${ROUNDS} times`, async () => {
    const ops: Op[] = []
    for (let round = 0; round < ROUNDS; round++) {
      ops.push({ op: 'session.put', session: raceSession(round) })
      ops.push({ op: 'transaction.put', transaction: raceTransaction(round) })
      ops.push({ op: 'staged.put', staged: raceStaged(round) })
    }
    await store.write({ ops })
    for (let i = 0; i < WORKERS; i++) racers.push(startRacer(url, schema, `worker-${i}`))
    for (const r of racers) expect(await r.next()).toBe('ready')

    for (let round = 0; round < ROUNDS; round++) {
      for (const r of racers) r.child.stdin.write(`${round}\n`)
      const results = await Promise.all(racers.map(async (r) => JSON.parse(await r.next())))
      expect(results.every((x) => x.round === round)).toBe(true)
      expect(
        results.filter((x) => x.nonce),
        `round ${round}: nonce winners`,
      ).toHaveLength(1)
      expect(
        results.filter((x) => x.commit),
        `round ${round}: commit winners`,
      ).toHaveLength(1)
    }
    for (const r of racers) r.child.stdin.end()

    const dump = await store.dump()
    expect(
      dump.sessions.every((s) => s.state === 'authorized' && s.authorized_by?.startsWith('worker-')),
    ).toBe(true)
    expect(dump.transactions.every((t) => t.state === 'committed')).toBe(true)
    expect(dump.staged).toEqual([])
    const ids = dump.tokens.map((t) => t.id)
    for (let round = 0; round < ROUNDS; round++) {
      expect(ids.filter((id) => id === `won-${round}`)).toHaveLength(1)
      expect(ids).toContain(`staged-${round}`)
    }
    const unlocked = await store.write({
      checks: [{ check: 'token.unlocked', tenant_id: T, id: 'staged-0', now: '2030-01-01T00:00:00.000Z' }],
      ops: [],
    })
    expect(unlocked.ok).toBe(true)
  }, 30_000)
})
