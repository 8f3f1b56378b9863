/**
 * `npm run bench:scale`: the file store (LMDB) at millions of ~1 KB tokens, under Node's default
 * heap. Loads `BENCH_TOKENS` (default 1 000 000) tokens in durable batches of 100 from 8 writers while an
 * open-loop reader gets a random loaded token every 2 ms (the longest event-loop stall and the get
 * p99 are counted meanwhile), closes the store, reopens it (timed), reports the heap used after the
 * reopen, then reads every token back by id.
 * Goals: reopen ≤ 1 s at any size, heap after reopen ≤ 1 GiB, no stall over 50 ms.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type FileStore, fileStore } from '../adapters/file/index.js'
import type { StoredToken } from '../src/kernel/types.js'

const TOTAL = Number(process.env['BENCH_TOKENS'] ?? 1_000_000)
const BATCH = 100
const WRITERS = 8
const TENANT = 'bench-tenant'
const DATA = { sealed: 'x'.repeat(900), v: 1 }
const idOf = (i: number) => `tok-${i.toString().padStart(8, '0')}`
const token = (i: number): StoredToken => ({
  id: idOf(i),
  tenant_id: TENANT,
  type: 'card',
  data: DATA,
  containers: ['/pci/high/'],
  metadata: { owner: `customer-${i % 1000}` },
  fingerprint: `fp-${i}`,
  created_by: 'bench-app',
  created_at: '2030-01-01T00:00:00.000Z',
})
const mib = (n: number) => `${(n / 2 ** 20).toFixed(0)} MiB`
const gc = () => (globalThis as { gc?: () => void }).gc?.()
const p99 = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length * 0.99)] ?? 0

const dir = await mkdtemp(join(tmpdir(), 'tokenvault-bench-scale-'))
try {
  let store: FileStore = await fileStore({ path: join(dir, 'store') })
  let loaded = 0
  let maxStall = 0
  const gets: number[] = []
  let last = performance.now()
  const reader = setInterval(() => {
    const now = performance.now()
    maxStall = Math.max(maxStall, now - last - 2)
    last = now
    if (loaded === 0) return
    const t0 = performance.now()
    void store.getToken(TENANT, idOf(Math.floor(Math.random() * loaded))).then(() => {
      gets.push(performance.now() - t0)
    })
  }, 2)
  const started = performance.now()
  let next = 0
  const writer = async () => {
    while (next < TOTAL) {
      const from = next
      const to = Math.min(TOTAL, from + BATCH)
      next = to
      const ops = []
      for (let j = from; j < to; j++) ops.push({ op: 'token.put' as const, token: token(j) })
      await store.write({ ops })
      loaded = Math.max(loaded, from)
      if (to % 250_000 === 0)
        console.log(`loaded ${to} in ${((performance.now() - started) / 1000).toFixed(0)} s`)
    }
  }
  await Promise.all(Array.from({ length: WRITERS }, writer))
  clearInterval(reader)
  const loadS = (performance.now() - started) / 1000
  console.log(
    `load: ${TOTAL} tokens in ${loadS.toFixed(0)} s (${(TOTAL / loadS).toFixed(0)}/s, durable batches of ${BATCH} from ${WRITERS} writers), data file ${mib(store.stats().bytes)}; while loading: longest event-loop stall ${maxStall.toFixed(1)} ms, get p99 ${p99(gets).toFixed(2)} ms over ${gets.length} gets`,
  )
  await store.close()
  gc()
  const heapBefore = process.memoryUsage().heapUsed
  const t0 = performance.now()
  store = await fileStore({ path: join(dir, 'store') })
  const reopenMs = performance.now() - t0
  gc()
  console.log(
    `reopen: ${reopenMs.toFixed(1)} ms; heap used after reopen ${mib(process.memoryUsage().heapUsed)} (before ${mib(heapBefore)}), rss ${mib(process.memoryUsage().rss)}`,
  )
  const t1 = performance.now()
  let found = 0
  for (let i = 0; i < TOTAL; i++) if (await store.getToken(TENANT, idOf(i))) found++
  const readS = (performance.now() - t1) / 1000
  gc()
  console.log(
    `read back: ${found} of ${TOTAL} tokens by id in ${readS.toFixed(1)} s (${(TOTAL / readS).toFixed(0)}/s); heap used ${mib(process.memoryUsage().heapUsed)}`,
  )
  await store.close()
} finally {
  await rm(dir, { recursive: true, force: true })
}
