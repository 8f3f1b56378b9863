/**
 * Token creates with one subscribed webhook against the same creates with none, in the same run,
 * at 64 in flight, on each store: the webhook's creates write an outbox entry in the same store
 * write, and the process delivers them (signing each, POSTing it to an in-process receiver
 * answering 204). Goal: ≥ 0.8. In the "this process" rows a hooked round's timed section lasts
 * until the receiver has had every delivery of its creates, so the ratio counts the whole cost:
 * left to run on their own, most deliveries of a round went out after it (file store, 3 000 creates
 * a round: about 100 during the round, 130 during the next plain round, 14 000 of 15 000 in the
 * closing `deliverDue()`, untimed). The "later" rows leave delivery to a worker (`deliverDue()`
 * after the last round, untimed): a create's own cost. Each row also gives the process's CPU time
 * (every thread, signing included) per create on each side, which a busy machine bends less than
 * a rate (docs/webhooks.md#performance), and the whole machine's CPU time per create (every
 * process: with PostgreSQL on this machine, its share too; Linux only). The count of deliveries in
 * each round goes to stderr.
 *
 * Rounds alternate (none, webhook, none, webhook, …) so a busy machine weighs on both alike; the
 * figure is the median of each side's rounds. Stores: memory, file (LMDB in a temporary directory),
 * PostgreSQL when TOKENVAULT_PG_URL is set. Run: `npm run bench:webhooks` (`BENCH_QUICK=1`: fewer rounds;
 * `BENCH_STORES=memory,file,postgres`: only those stores, so a run on a shared machine stays under
 * 60 s; `BENCH_DELIVERY=manual`: only the "later" rows; `BENCH_ROUNDS=n`: n rounds a side). Each row is printed as soon as it is measured.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
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
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? (QUICK ? 2 : 4))
/** Linux's clock ticks a second (USER_HZ), the unit of /proc/stat. */
const TICKS_PER_SECOND = 100
const RECEIVER = 'https://hooks.bench.test'
const KEY = Buffer.alloc(32, 7)
const STORES = (process.env['BENCH_STORES'] ?? 'memory,file,postgres').split(',')
const DELIVERIES = (process.env['BENCH_DELIVERY'] ?? 'auto,manual').split(',') as ('auto' | 'manual')[]
/** Requests the receiver has answered, all services together. */
let received = 0

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
    egressClient: routedEgress({
      [RECEIVER]: () => {
        received++
        return new Response(null, { status: 204 })
      },
    }),
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

type Side = Awaited<ReturnType<typeof setUp>>

/** One round's figures: creates per second, and CPU time of the process (µs, every thread) per create. */
interface Round {
  rate: number
  cpu: number
  /** CPU time of the whole machine (µs, every process: the database too) per create. */
  machine: number
  /** Deliveries the receiver got while the round's creates ran, and while it drained them. */
  during: number
  drained: number
}

/**
 * `CREATES` token creates, `IN_FLIGHT` at a time; with `drain`, the timed section goes on until the
 * receiver has had every delivery these creates made (one each), so a hooked round counts its
 * deliveries' signatures, requests and outbox writes, not only its creates.
 */
async function round(side: Side, drain: boolean): Promise<Round> {
  let next = 0
  const before = received
  const cpu = process.cpuUsage()
  const busy0 = machineBusy()
  const t = performance.now()
  const worker = async () => {
    while (next < CREATES) {
      next++
      await side.writer.tokens.create({ type: 'token', data: `value-${next}` })
    }
  }
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker))
  const during = received - before
  if (drain) await drained(side, before + CREATES)
  const used = process.cpuUsage(cpu)
  const machine = (machineBusy() - busy0) / CREATES
  const seconds = (performance.now() - t) / 1000
  return {
    rate: CREATES / seconds,
    cpu: (used.user + used.system) / CREATES,
    machine,
    during,
    drained: received - before - during,
  }
}

/** Waits until the receiver has had `target` requests in all (the dispatcher is delivering them). */
async function drained(side: Side, target: number): Promise<void> {
  for (let passes = 0; received < target; passes++) {
    if (passes > 10_000) throw new Error(`deliveries missing: ${target - received}`)
    await side.service.admin.webhooks.deliverDue()
  }
}

/**
 * CPU time every process of the machine has used (µs, from /proc/stat's first line, less idle and
 * I/O wait; 0 where there is none): with PostgreSQL on the same machine, the database's share of a
 * create is counted too.
 */
function machineBusy(): number {
  if (!existsSync('/proc/stat')) return 0
  const ticks = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number)
  const busy = ticks.reduce((a, b) => a + b, 0) - (ticks[3] ?? 0) - (ticks[4] ?? 0)
  return busy * (1_000_000 / TICKS_PER_SECOND)
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/**
 * Alternated rounds of the plain and hooked sides on two stores opened by `open`. Auto delivery:
 * each hooked round is timed until its deliveries are all received (no delivery of one round runs
 * in the next). Manual: the hooked creates only write their outbox entries; they are delivered
 * after the last round, untimed (what a create costs when a worker delivers).
 */
async function row(name: string, open: () => Promise<Store>, delivery: 'auto' | 'manual'): Promise<string> {
  const plain = await setUp(await open(), false)
  const hooked = await setUp(await open(), true, delivery)
  const drain = delivery === 'auto'
  await round(plain, false)
  await round(hooked, drain)
  const a: Round[] = []
  const b: Round[] = []
  for (let i = 0; i < ROUNDS; i++) {
    a.push(await round(plain, false))
    b.push(await round(hooked, drain))
  }
  const closing = received
  await drained(hooked, closing + (drain ? 0 : (ROUNDS + 1) * CREATES))
  console.error(
    `  ${name}, ${delivery}: deliveries during the creates / draining, each hooked round: ${b.map((r) => `${r.during}/${r.drained}`).join(', ')}; during plain rounds: ${a.map((r) => r.during).join(', ')}; after the last round: ${received - closing}`,
  )
  await plain.service.close()
  await hooked.service.close()
  const [ra, rb] = [median(a.map((r) => r.rate)), median(b.map((r) => r.rate))]
  const [ca, cb] = [median(a.map((r) => r.cpu)), median(b.map((r) => r.cpu))]
  const [ma, mb] = [median(a.map((r) => r.machine)), median(b.map((r) => r.machine))]
  const ratio = rb / ra
  const how = drain ? 'this process, timed until delivered' : 'later (deliverDue, untimed)'
  return `| ${name} | ${how} | ${ra.toFixed(0)} | ${rb.toFixed(0)} | ${ratio.toFixed(2)} | ${ca.toFixed(0)} / ${cb.toFixed(0)} | ${ma.toFixed(0)} / ${mb.toFixed(0)} | ${ratio >= 0.8 ? 'yes' : 'NO'} |`
}

async function main() {
  const dirs: string[] = []
  const fresh = () => {
    const dir = mkdtempSync(join(tmpdir(), 'tv-bench-webhooks-'))
    dirs.push(dir)
    return dir
  }
  console.log(`${IN_FLIGHT} in flight, ${CREATES} creates a round, median of ${ROUNDS} rounds each\n`)
  console.log(
    '| store | deliveries | creates/s, no webhook | creates/s, one webhook | ratio | CPU µs a create, none / one | machine CPU µs a create | ≥ 0.8 |',
  )
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |')
  const lines = { push: (line: string) => console.log(line) }
  for (const delivery of DELIVERIES) {
    if (STORES.includes('memory')) lines.push(await row('memory', async () => memoryStore(), delivery))
    if (STORES.includes('file')) lines.push(await row('file', () => fileStore({ path: fresh() }), delivery))
  }
  const pg = process.env['TOKENVAULT_PG_URL']
  if (pg && STORES.includes('postgres')) {
    const { postgresStore } = await import('../adapters/postgres/index.js')
    let n = 0
    for (const delivery of DELIVERIES)
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
