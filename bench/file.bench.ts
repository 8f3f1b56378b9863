import * as fs from 'node:fs'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type FileStore, fileStore } from '../adapters/file/index.js'
import type { Op } from '../src/types.js'
import { type BenchOptions, type BenchRow, inFlight } from './harness.js'

/**
 * The file store's durable writes against raw appends of the same record bytes to a file in the
 * same directory tree (`write` + `fdatasync`, one at a time and group-committed), and its recovery
 * against reading and `JSON.parse`-ing the bytes it recovers from.
 */

const tokenOp = (id: string): Op => ({
  op: 'token.put',
  token: {
    id,
    tenant_id: 'bench-tenant',
    type: 'card',
    data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 },
    containers: ['/general/high/'],
    metadata: { owner: 'ann' },
    created_by: 'bench-app',
    created_at: '2030-01-01T00:00:00.000Z',
  },
})

/** The journal record the store writes for one op: length, CRC-32, JSON payload. */
const recordBytes = (op: Op): Buffer => {
  const payload = Buffer.from(JSON.stringify([op]))
  const record = Buffer.alloc(8 + payload.length)
  record.writeUInt32LE(payload.length, 0)
  payload.copy(record, 8)
  return record
}

const write = (fd: number, data: Buffer, position: number) =>
  new Promise<void>((resolve, reject) =>
    fs.write(fd, data, 0, data.length, position, (error) => (error ? reject(error) : resolve())),
  )
const fdatasync = (fd: number) =>
  new Promise<void>((resolve, reject) => fs.fdatasync(fd, (error) => (error ? reject(error) : resolve())))

/** A raw append-only file: one `write` + `fdatasync` per record, or group-committed. */
function rawLog(path: string) {
  const fd = fs.openSync(path, 'w')
  let position = 0
  let queue: Buffer[] = []
  let waiters: (() => void)[] = []
  let flushing = false
  const flush = async () => {
    while (queue.length) {
      const chunks = queue
      const done = waiters
      queue = []
      waiters = []
      const data = Buffer.concat(chunks)
      await write(fd, data, position)
      position += data.length
      await fdatasync(fd)
      for (const resolve of done) resolve()
    }
    flushing = false
  }
  return {
    /** `write` + `fdatasync` of one record. */
    async single(record: Buffer) {
      await write(fd, record, position)
      position += record.length
      await fdatasync(fd)
    },
    /** Queues a record; one flush at a time writes and syncs everything queued. */
    grouped(record: Buffer): Promise<void> {
      queue.push(record)
      const done = new Promise<void>((resolve) => waiters.push(resolve))
      if (!flushing) {
        flushing = true
        queueMicrotask(() => void flush())
      }
      return done
    },
    close: () => fs.closeSync(fd),
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now()
  await fn()
  return performance.now() - start
}

/**
 * Alternates `op` and `baseline` in blocks of `block` sequential calls until `ms` have passed, and
 * returns the ops/s of each over its own time only: both see the same disk and machine noise.
 */
async function paired(op: () => Promise<unknown>, baseline: () => Promise<unknown>, ms: number, block = 20) {
  let opMs = 0
  let baseMs = 0
  let count = 0
  const start = performance.now()
  while (performance.now() - start < ms) {
    let t = performance.now()
    for (let i = 0; i < block; i++) await op()
    opMs += performance.now() - t
    t = performance.now()
    for (let i = 0; i < block; i++) await baseline()
    baseMs += performance.now() - t
    count += block
  }
  return { op: (count * 1000) / opMs, baseline: (count * 1000) / baseMs }
}

/** Like `paired`, for `writers` concurrent callers running `total` calls per block. */
async function pairedInFlight(
  op: () => Promise<unknown>,
  baseline: () => Promise<unknown>,
  writers: number,
  total: number,
  rounds: number,
) {
  let opMs = 0
  let baseMs = 0
  for (let round = 0; round < rounds; round++) {
    opMs += (total * 1000) / (await inFlight(op, writers, total))
    baseMs += (total * 1000) / (await inFlight(baseline, writers, total))
  }
  return { op: (rounds * total * 1000) / opMs, baseline: (rounds * total * 1000) / baseMs }
}

async function writeRows(dir: string, opts: BenchOptions): Promise<BenchRow[]> {
  const rows: BenchRow[] = []
  const raw = rawLog(join(dir, 'raw.log'))
  const record = recordBytes(tokenOp('t-00000000'))
  let n = 0
  for (const sync of ['fdatasync', 'dsync'] as const) {
    const store = await fileStore({ path: join(dir, `store-${sync}`), sync })
    const storeWrite = () => store.write({ ops: [tokenOp(`t${n++}`)] })
    try {
      await paired(storeWrite, () => raw.single(record), 100)
      const single = await paired(storeWrite, () => raw.single(record), opts.quick ? 500 : 3000)
      rows.push({
        group: 'file store',
        operation: `durable token.put, 1 writer (sync: ${sync})`,
        opsPerSec: single.op,
        baseline: 'raw write + fdatasync loop, same record bytes',
        baselineOpsPerSec: single.baseline,
        ratio: single.baseline / single.op,
        goal: '≤ 1.25× (≥ 80 % of raw)',
      })
      for (const writers of [10, 50]) {
        const total = writers * (opts.quick ? 10 : 40)
        await pairedInFlight(storeWrite, () => raw.grouped(record), writers, total, 1)
        const before = store.stats()
        const rate = await pairedInFlight(
          storeWrite,
          () => raw.grouped(record),
          writers,
          total,
          opts.quick ? 3 : 10,
        )
        const after = store.stats()
        rows.push({
          group: 'file store',
          operation: `durable token.put, ${writers} writers (sync: ${sync})`,
          opsPerSec: rate.op,
          baseline: 'raw group commit (one write + fdatasync per flush)',
          baselineOpsPerSec: rate.baseline,
          ratio: rate.baseline / rate.op,
          goal: '≤ 2× (≥ 50 % of raw group commit)',
          note: `${((after.records - before.records) / (after.syncs - before.syncs)).toFixed(1)} records per flush`,
        })
      }
    } finally {
      await store.close()
    }
  }
  raw.close()
  return rows
}

/** Opens and closes the store at `path`; returns the median of `rounds` times (ms). */
async function reopenTime(path: string, rounds: number): Promise<number> {
  const times: number[] = []
  for (let i = 0; i < rounds; i++) {
    let store: FileStore | undefined
    times.push(
      await timed(async () => {
        store = await fileStore({ path, durability: 'none', compactMinBytes: Number.MAX_SAFE_INTEGER })
      }),
    )
    await store!.close()
  }
  return median(times)
}

async function recoveryRows(dir: string, opts: BenchOptions): Promise<BenchRow[]> {
  const tokens = opts.quick ? 10_000 : 100_000
  const rounds = opts.quick ? 3 : 5
  const path = join(dir, 'recovery')
  const store = await fileStore({ path, durability: 'none', compactMinBytes: Number.MAX_SAFE_INTEGER })
  let n = 0
  await inFlight(() => store.write({ ops: [tokenOp(`r${n++}`)] }), 100, tokens)
  await store.close()
  const rows: BenchRow[] = []
  const row = (
    operation: string,
    ms: number,
    baseline: string,
    baselineMs: number,
    bytes: number,
  ): BenchRow => ({
    group: 'file store recovery',
    operation,
    opsPerSec: (tokens * 1000) / ms,
    baseline,
    baselineOpsPerSec: (tokens * 1000) / baselineMs,
    ratio: ms / baselineMs,
    goal: '≤ 3×',
    note: `${tokens.toLocaleString('en-US')} tokens, ${(bytes / 1e6).toFixed(1)} MB; ops/s = tokens recovered per second`,
  })

  // From the journal alone: one record per token.
  const journal = join(path, 'journal.0.log')
  const journalMs = await reopenTime(path, rounds)
  const parseJournal = async () => {
    const data = await readFile(journal)
    for (let at = 0; at < data.length; ) {
      const length = data.readUInt32LE(at)
      JSON.parse(data.toString('utf8', at + 8, at + 8 + length))
      at += 8 + length
    }
    return data.length
  }
  const journalBytes = await parseJournal()
  const parseJournalMs = await medianOf(rounds, parseJournal)
  rows.push(
    row(
      'reopen from journal',
      journalMs,
      'readFile + JSON.parse of each record',
      parseJournalMs,
      journalBytes,
    ),
  )

  // From a snapshot alone.
  const compacting = await fileStore({ path, durability: 'none' })
  await compacting.compact()
  const snapshotBytes = compacting.stats().snapshotBytes
  await compacting.close()
  const snapshot = join(path, 'snapshot.1.json')
  const snapshotMs = await reopenTime(path, rounds)
  // The snapshot is a header line, then frames laid out as journal records (u32 length | u32 CRC | JSON).
  const parseSnapshotMs = await medianOf(rounds, async () => {
    const data = await readFile(snapshot)
    for (let at = data.indexOf(0x0a) + 1; at < data.length; ) {
      const length = data.readUInt32LE(at)
      JSON.parse(data.toString('utf8', at + 8, at + 8 + length))
      at += 8 + length
    }
  })
  rows.push(
    row(
      'reopen from snapshot',
      snapshotMs,
      'readFile + JSON.parse of each snapshot frame',
      parseSnapshotMs,
      snapshotBytes,
    ),
  )
  return rows
}

async function medianOf(rounds: number, fn: () => Promise<unknown>): Promise<number> {
  const times: number[] = []
  for (let i = 0; i < rounds; i++) times.push(await timed(fn))
  return median(times)
}

/** Durable write throughput at 1, 10 and 50 writers, and recovery of 100k tokens (10k when quick). */
export async function run(opts: BenchOptions): Promise<BenchRow[]> {
  const dir = await mkdtemp(join(tmpdir(), 'tokenvault-bench-file-'))
  try {
    return [...(await writeRows(dir, opts)), ...(await recoveryRows(dir, opts))]
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import('./report.js')
  printRows(await run({ quick: process.env.BENCH_QUICK === '1' }))
}
