/**
 * Token creates with one subscribed webhook against the same creates with none, in the same run,
 * at 64 in flight, on each store: the webhook's creates write an outbox entry in the same store
 * write, and the process delivers them meanwhile (signing each, POSTing it to an in-process
 * receiver answering 204), so the ratio counts the whole cost. Goal: ≥ 0.8. On the memory store the
 * creates never give the event loop a turn (each settles in promises alone), so no delivery goes out
 * until the closing `deliverDue()`: both memory rows measure the creates' own cost
 * (docs/webhooks.md#performance).
 *
 * Rounds alternate (none, webhook, none, webhook, …) so a busy machine weighs on both alike; the
 * figure is the median of each side's rounds. Stores: memory, file (LMDB in a temporary directory),
 * PostgreSQL when TOKENVAULT_PG_URL is set. Run: `npm run bench:webhooks` (`BENCH_QUICK=1`: fewer rounds;
 * `BENCH_STORES=memory,file,postgres`: only those stores, so a run on a shared machine stays under
 * 60 s). Each row is printed as soon as it is measured.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { routedEgress } from '../adapters/egress/index.js'
import { fileStore } from '../adapters/file/index.js'
import { memoryStore } from '../adapters/memory/index.js'
import { createService, systemClock } from '../entry/index.js'
import type { Store } from '../src/store/contract.js'

const QUICK = process.env['BENCH_QUICK'] === '1'
const IN_FLIGHT = 64
const CREATES = QUICK ? 1000 : 3000
const ROUNDS = QUICK ? 2 : 4
const RECEIVER = 'https://hooks.bench.test'
const KEY = Buffer.alloc(32, 7)
const STORES = (process.env['BENCH_STORES'] ?? 'memory,file,postgres').split(',')

/** A service over `store` with a private key, and a webhook on token.created when `hooked`. */
async function setUp(store: Store, hooked: boolean, delivery: 'auto' | 'manual' = 'auto') {
  const service = createService({
    store,
    webhookDelivery: delivery,
    maxPendingDeliveriesPerTenant: 1_000_000,
    clock: systemClock,
    runner: null,
    masterKey: KEY,
    egress: [RECEIVER],
    egressClient: routedEgress({ [RECEIVER]: () => new Response(null, { status: 204 }) }),
  })
  const tenant = await service.admin.createTenant({ name: hooked ? 'hooked' : 'plain' })
  const make = (type: 'private' | 'management', permissions: ('token:create' | 'webhook:create')[]) =>
    service.admin.createApplication({ tenantId: tenant.id, name: type, type, permissions })
  if (hooked) {
    const m = await make('management', ['webhook:create'])
    await service
      .connect(m.key)
      .webhooks.create({ name: 'b', url: `${RECEIVER}/in`, events: ['token.created'] })
  }
  const writer = service.connect((await make('private', ['token:create'])).key)
  return { service, writer }
}

/** Creates per second of `CREATES` token creates, `IN_FLIGHT` at a time. */
async function rate(writer: Awaited<ReturnType<typeof setUp>>['writer']): Promise<number> {
  let next = 0
  const t = performance.now()
  const worker = async () => {
    while (next < CREATES) {
      next++
      await writer.tokens.create({ type: 'token', data: `value-${next}` })
    }
  }
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker))
  return CREATES / ((performance.now() - t) / 1000)
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

async function row(name: string, open: () => Promise<Store>, delivery: 'auto' | 'manual'): Promise<string> {
  const plain = await setUp(await open(), false)
  const hooked = await setUp(await open(), true, delivery)
  await rate(plain.writer)
  await rate(hooked.writer)
  const a: number[] = []
  const b: number[] = []
  for (let i = 0; i < ROUNDS; i++) {
    a.push(await rate(plain.writer))
    b.push(await rate(hooked.writer))
  }
  await hooked.service.admin.webhooks.deliverDue()
  await plain.service.close()
  await hooked.service.close()
  const ratio = median(b) / median(a)
  return `| ${name} | ${delivery === 'auto' ? 'this process' : 'later (deliverDue)'} | ${median(a).toFixed(0)} | ${median(b).toFixed(0)} | ${ratio.toFixed(2)} | ${ratio >= 0.8 ? 'yes' : 'NO'} |`
}

async function main() {
  const dirs: string[] = []
  const fresh = () => {
    const dir = mkdtempSync(join(tmpdir(), 'tv-bench-webhooks-'))
    dirs.push(dir)
    return dir
  }
  console.log(`${IN_FLIGHT} in flight, ${CREATES} creates a round, median of ${ROUNDS} rounds each\n`)
  console.log('| store | deliveries | creates/s, no webhook | creates/s, one webhook | ratio | ≥ 0.8 |')
  console.log('| --- | --- | --- | --- | --- | --- |')
  const lines = { push: (line: string) => console.log(line) }
  for (const delivery of ['auto', 'manual'] as const) {
    if (STORES.includes('memory')) lines.push(await row('memory', async () => memoryStore(), delivery))
    if (STORES.includes('file')) lines.push(await row('file', () => fileStore({ path: fresh() }), delivery))
  }
  const pg = process.env['TOKENVAULT_PG_URL']
  if (pg && STORES.includes('postgres')) {
    const { postgresStore } = await import('../adapters/postgres/index.js')
    let n = 0
    for (const delivery of ['auto', 'manual'] as const)
      lines.push(
        await row(
          'postgres',
          () => postgresStore({ connectionString: pg, schema: `bench_webhooks_${Date.now()}_${n++}` }),
          delivery,
        ),
      )
  }
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
}

await main()
