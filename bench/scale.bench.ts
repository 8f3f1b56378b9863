/**
 * The file store at scale: loads N card tokens (1M; 5M with `BENCH_LONG=1`, or `BENCH_TOKENS=n`),
 * then measures, each against a floor taken in the same process:
 *
 * - heap per token after loading and after a reopen, against the token's JSON size;
 * - during a compaction, with an open-loop reader (a `getToken` every 2 ms, latency counted from
 *   when it was due, so a stall shows up in full) and a writer (a token every 5 ms): the longest
 *   event-loop stall (`monitorEventLoopDelay`), get p50/p99/max, and how many writes were
 *   acknowledged while the compaction ran;
 * - recovery (reopening the directory) against `JSON.parse` of the same bytes (each frame of the
 *   snapshot and each journal record parsed, nothing checked or built).
 *
 *   node --expose-gc --max-old-space-size=8192 --import tsx bench/scale.bench.ts
 *   BENCH_LONG=1 node --expose-gc --max-old-space-size=12288 --import tsx bench/scale.bench.ts
 *
 * Not part of `npm test` or `npm run bench`; bounded by N (about a minute per million tokens).
 * Goals: no stall over 50 ms, get p99 during compaction <= 10 ms, heap <= 1.5x JSON, recovery
 * <= 3x JSON.parse.
 */
import { randomUUID } from 'node:crypto'
import * as fs from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { type FileStore, fileStore, type RecoveryProgress } from '../adapters/file/index.js'
import { RECORD_HEADER_BYTES } from '../adapters/file/record.js'
import type { Op, StoredToken } from '../src/types.js'

const LONG = process.env.BENCH_LONG === '1'
const N = Number(process.env.BENCH_TOKENS ?? (LONG ? 5_000_000 : 1_000_000))
const BATCH = 1000
const TENANT = randomUUID()
const APP = randomUUID()
const gc = (globalThis as { gc?: () => void }).gc
if (!gc) throw new Error('run with node --expose-gc')

/** A card token as the service stores it: its own ids, a fingerprint and a mask; about 400 bytes of JSON. */
function card(i: number): StoredToken {
  const number = `4${String(i).padStart(15, '0')}`
  return {
    id: randomUUID(),
    tenant_id: TENANT,
    type: 'card',
    data: {
      number,
      expiration_month: (i % 12) + 1,
      expiration_year: 2030,
      cvc: String(i % 1000).padStart(3, '0'),
    },
    mask: { number: `${number.slice(0, 6)}XXXXXX${number.slice(-4)}` },
    fingerprint: randomUUID().replaceAll('-', ''),
    containers: ['/pci/high/'],
    metadata: { customer: `c${i % 100000}` },
    created_by: APP,
    created_at: new Date(1_900_000_000_000 + i).toISOString(),
  } as unknown as StoredToken
}

const heap = () => {
  gc()
  gc()
  return process.memoryUsage().heapUsed
}
const ms = (t: number) => `${t.toFixed(0)} ms`
const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0
const out: string[] = []
const line = (s: string) => {
  console.log(s)
  out.push(s)
}

const dir = await mkdtemp(join(tmpdir(), 'tokenvault-scale-'))
try {
  line(`file store at ${N.toLocaleString('en-US')} card tokens, Node ${process.version}`)
  // Load: batches of 1000 tokens, no automatic compaction (one is timed below).
  const heapBefore = heap()
  let store: FileStore = await fileStore({ path: dir, compactMinBytes: 1e15 })
  const ids: string[] = []
  let jsonBytes = 0
  const loadStarted = performance.now()
  for (let i = 0; i < N; i += BATCH) {
    const ops: Op[] = []
    for (let j = i; j < Math.min(N, i + BATCH); j++) {
      const token = card(j)
      if (j % 100 === 0) ids.push(token.id)
      jsonBytes += Buffer.byteLength(JSON.stringify(token))
      ops.push({ op: 'token.put', token })
    }
    await store.write({ ops })
  }
  const loadMs = performance.now() - loadStarted
  const perToken = (heap() - heapBefore) / N
  const jsonPerToken = jsonBytes / N
  line(
    `load: ${ms(loadMs)} (${Math.round(N / (loadMs / 1000)).toLocaleString('en-US')} tokens/s, batches of ${BATCH}, fsync)`,
  )
  line(
    `heap after load: ${perToken.toFixed(0)} B per token, JSON ${jsonPerToken.toFixed(0)} B: ${(perToken / jsonPerToken).toFixed(2)}x`,
  )

  // Compaction with an open-loop reader and a writer.
  const delay = monitorEventLoopDelay({ resolution: 1 })
  const latencies: number[] = []
  const writeLatencies: number[] = []
  let running = true
  let writes = 0
  let k = 0
  const reader = (async () => {
    const started = performance.now()
    let n = 0
    const inflight: Promise<void>[] = []
    while (running) {
      const due = started + n * 2
      n++
      const wait = due - performance.now()
      if (wait > 0) await new Promise((r) => setTimeout(r, wait))
      k = (k + 7919) % ids.length
      const id = ids[k]!
      inflight.push(
        store.getToken(TENANT, id).then((t) => {
          if (!t) throw new Error(`token ${id} missing`)
          latencies.push(performance.now() - due)
        }),
      )
      if (inflight.length > 1000) await Promise.all(inflight.splice(0))
    }
    await Promise.all(inflight)
  })()
  const writer = (async () => {
    while (running) {
      await new Promise((r) => setTimeout(r, 5))
      const started = performance.now()
      await store.write({ ops: [{ op: 'token.put', token: card(N + writes) }] })
      writeLatencies.push(performance.now() - started)
      writes++
    }
  })()
  await new Promise((r) => setTimeout(r, 200))
  // The floor: the same reader and writer for as long, without a compaction (what the machine and
  // the garbage collector do anyway; other processes on a shared machine show up here too).
  const window = async (during: () => Promise<unknown>) => {
    latencies.length = 0
    writeLatencies.length = 0
    const writesBefore = writes
    delay.reset()
    delay.enable()
    const started = performance.now()
    await during()
    const elapsed = performance.now() - started
    delay.disable()
    const reads = [...latencies].sort((a, b) => a - b)
    return {
      elapsed,
      stall: delay.max / 1e6,
      stallP99: delay.percentile(99) / 1e6,
      reads,
      writes: writes - writesBefore,
      longestWrite: Math.max(0, ...writeLatencies),
    }
  }
  const compacted = await window(() => store.compact())
  const floor = await window(() => new Promise((r) => setTimeout(r, compacted.elapsed)))
  running = false
  await Promise.all([reader, writer])
  const describe = (w: typeof floor) =>
    `longest event-loop stall ${ms(w.stall)} (p99 ${ms(w.stallP99)}); ${w.reads.length} gets: ` +
    `p50 ${pct(w.reads, 0.5).toFixed(1)} ms, p99 ${pct(w.reads, 0.99).toFixed(1)} ms, max ${pct(w.reads, 1).toFixed(1)} ms; ` +
    `${w.writes} writes acknowledged (fsync), longest ${w.longestWrite.toFixed(1)} ms`
  const compactMs = compacted.elapsed
  const stats = store.stats()
  line(
    `compaction: ${ms(compactMs)} (writes held ${ms(stats.compactionHoldMs)} while it copied the records), snapshot ${(stats.snapshotBytes / 2 ** 20).toFixed(0)} MiB; ${describe(compacted)}`,
  )
  line(`floor, no compaction, as long: ${describe(floor)}`)
  await store.close()

  // Recovery against JSON.parse of the same bytes.
  const files = fs.readdirSync(dir).filter((f) => /^(snapshot|journal)\.\d+\.(json|log)$/.test(f))
  let bytes = 0
  /** Reads each file and `JSON.parse`s each frame or record of it: nothing checked, nothing kept. */
  const parseAll = () => {
    let took = 0
    bytes = 0
    for (const f of files) {
      // In blocks (a file may pass 2 GiB, more than one read can return); only parsing is timed.
      const fd = fs.openSync(join(dir, f), 'r')
      const size = fs.fstatSync(fd).size
      bytes += size
      let buffer = Buffer.allocUnsafe(64 * 2 ** 20)
      let base = 0
      let have = 0
      let at = 0
      let first = f.startsWith('snapshot')
      while (base + at < size) {
        if (at + RECORD_HEADER_BYTES > have || at + RECORD_HEADER_BYTES + buffer.readUInt32LE(at) > have) {
          const need = at + RECORD_HEADER_BYTES <= have ? RECORD_HEADER_BYTES + buffer.readUInt32LE(at) : 64
          const rest = have - at
          const next = need > buffer.length ? Buffer.allocUnsafe(need) : buffer
          buffer.copy(next, 0, at, have)
          buffer = next
          base += at
          at = 0
          const read = fs.readSync(fd, buffer, rest, buffer.length - rest, base + rest)
          if (read === 0) break
          have = rest + read
          if (first) {
            at = buffer.indexOf(0x0a) + 1
            first = false
          }
          continue
        }
        const length = buffer.readUInt32LE(at)
        const started = performance.now()
        JSON.parse(buffer.toString('utf8', at + RECORD_HEADER_BYTES, at + RECORD_HEADER_BYTES + length))
        took += performance.now() - started
        at += RECORD_HEADER_BYTES + length
      }
      fs.closeSync(fd)
    }
    return took
  }
  // Before and after the reopen: on a shared machine the load moves; the faster one is the floor.
  const parseBefore = parseAll()
  // Let the closed store's state go before measuring what the reopened one holds.
  store = undefined as unknown as FileStore
  const heapBeforeOpen = heap()
  const reports: RecoveryProgress[] = []
  const openStarted = performance.now()
  store = await fileStore({ path: dir, onRecoveryProgress: (p) => reports.push(p) })
  const openMs = performance.now() - openStarted
  const reopened = (heap() - heapBeforeOpen) / (N + writes)
  const parseMs = Math.min(parseBefore, parseAll())
  line(
    `recovery: ${ms(openMs)} for ${(bytes / 2 ** 20).toFixed(0)} MiB; JSON.parse of the same bytes ${ms(parseMs)}: ` +
      `${(openMs / parseMs).toFixed(2)}x (${reports.length} progress reports)`,
  )
  line(`heap after reopen: ${reopened.toFixed(0)} B per token: ${(reopened / jsonPerToken).toFixed(2)}x JSON`)
  if (!(await store.getToken(TENANT, ids[ids.length - 1]!)))
    throw new Error('last token missing after reopen')
  await store.close()
} finally {
  await rm(dir, { recursive: true, force: true })
}
