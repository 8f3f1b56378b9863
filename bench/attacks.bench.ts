/**
 * Cross-tenant attacks over loopback: for each attack, tenant B's GET p99 alone, then while tenant
 * A attacks, in the same run, and their ratio (the goal: at most 2x). Each attack runs against a
 * fresh server in a child process (the vault's HTTP adapter on node:http, as `serve` runs it); this
 * process is B's client, and A's client is a second child, so A's sending and reading never delay
 * B's answers on B's own event loop.
 *
 *   (a) 96 concurrent 400 KB creates
 *   (b) GET /v2/tokens?size=100 over tokens of about 900 KB each
 *   (c) search `type:ta AND type:tb` over interleaved tokens (TOKENVAULT_ATTACK_SEARCH_TOKENS, default 5000; the attack's full size is 50000)
 *   (d) wildcard searches over TOKENVAULT_ATTACK_WILDCARD_TOKENS tokens (default 5000; full size 30000)
 *   (e) detokenize with `escape_once` over a token of about 1 MB, through the proxy (`POST /proxy`:
 *       `/detokenize` refuses filters before it reads a token); the budget refuses it before anything
 *       is sent, so the destination, routed in the child, receives nothing
 *   (f) 32 concurrent small creates (on the memory store each ends within the turn it began in)
 *   (g) the same, A's tenant with five webhooks on token.created, each delivered to the routed
 *       destination: A's deliveries (a signature, two outbox writes and a request each) on top
 *
 * A's client is a process of its own on the same cores: in (f) and (g) it sends thousands of
 * requests a second and takes most of a core, which the server's and B's processes then share.
 *
 * Run: `npm run bench:attacks [-- --store file:PATH | --store postgres://URL] [-- --only a,c]`. Each attack takes about
 * 20-30 s (seeding included); B is measured in four rounds of 1.5 s alone then 2 s under attack
 * (the attack started 0.5 s before and stopped after each), 6 s alone and 8 s under in all.
 */

import { type ChildProcess, fork } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { Agent, createServer, request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { routedEgress } from '../adapters/egress/index.js'
import type { FileStore } from '../adapters/file/index.js'
import { createHttpHandler, toNodeListener } from '../adapters/http/index.js'
import { memoryStore } from '../adapters/memory/index.js'
import { HeavyLane, LANE_NICE } from '../bin/heavy-lane.js'
import { BOUND_FLAGS, HTTP_BOUNDS } from '../bin/options.js'
import { tuneHeapFor } from '../bin/serve.js'
import { openStore } from '../bin/stores.js'
import { createService, type Service, systemClock } from '../entry/index.js'
import { PERMISSIONS_BY_TYPE } from '../src/applications/permissions.js'

const ROLE = '--attacks-server'
/** The argument that makes this file A's attacker, in a process of its own. */
const ATTACKER = '--attacks-attacker'
/** Rounds of B alone then B under attack, alternated; each window's length. */
const ROUNDS = 4
const ALONE_MS = 1500
const UNDER_MS = 2000
const WARM_MS = 500
/** Attack (e)'s proxy destination: routed in the child (it answers `ok`), never on the network. */
const DESTINATION = 'https://destination.test'

type Scenario = 'a' | 'b' | 'c' | 'd' | 'e' | 'f' | 'g'

/** What a child server answers once seeded: the tenants' keys and the ids the attacks name. */
interface Seeded {
  port: number
  aKey: string
  bKey: string
  bToken: string
  aToken: string
}

const sizeOf = (name: string, fallback: number) => Number(process.env[name] ?? fallback)

/** A tenant with a private application that may reveal every token: its key and the tenant's id. */
async function tenantKey(service: Service, name: string): Promise<{ key: string; tenantId: string }> {
  const tenant = await service.admin.createTenant({ name })
  // Rules grant token permissions only; the application's other permissions are not a rule's.
  const permissions = PERMISSIONS_BY_TYPE.private.filter((p) => p.startsWith('token:'))
  const rules = [
    { description: 'all', priority: 1, container: '/', transform: 'reveal' as const, permissions },
  ]
  const made = await service.admin.createApplication({ tenantId: tenant.id, name, type: 'private', rules })
  return { key: made.key, tenantId: tenant.id }
}

/** Creates `count` tokens of A, `make(i)` giving each one's body, a few at a time. */
async function seed(service: Service, key: string, count: number, make: (i: number) => object) {
  const client = service.connect(key)
  let last = ''
  for (let i = 0; i < count; i += 50) {
    const batch = Array.from({ length: Math.min(50, count - i) }, (_, j) =>
      client.tokens.create(make(i + j) as never),
    )
    last = (await Promise.all(batch)).at(-1)!.id
  }
  return last
}

/** The data each attack needs in A's tenant: the id an attack names, if any. */
async function seedAttack(scenario: Scenario, service: Service, a: { key: string; tenantId: string }) {
  const aKey = a.key
  switch (scenario) {
    case 'a':
      return ''
    case 'b':
      return seed(service, aKey, 110, (i) => ({ type: 'big', data: `${i}`.padEnd(900_000, 'x') }))
    case 'c': {
      const count = sizeOf('TOKENVAULT_ATTACK_SEARCH_TOKENS', 5000)
      return seed(service, aKey, count, (i) => ({ type: i % 2 ? 'ta' : 'tb', data: i }))
    }
    case 'd': {
      const count = sizeOf('TOKENVAULT_ATTACK_WILDCARD_TOKENS', 5000)
      return seed(service, aKey, count, (i) => ({ type: 'w', data: i }))
    }
    case 'e':
      return seed(service, aKey, 1, () => ({ type: 'amp', data: '&'.repeat(1_000_000) }))
    case 'f':
      return ''
    case 'g':
      await hooks(service, a.tenantId)
      return ''
  }
}

/** Five webhooks (the most a tenant may have) on A's token creates, each delivering to the destination. */
async function hooks(service: Service, tenantId: string) {
  const { key } = await service.admin.createApplication({
    tenantId,
    name: 'hooks',
    type: 'management',
    permissions: ['webhook:create'],
  })
  for (let i = 0; i < 5; i++)
    await service
      .connect(key)
      .webhooks.create({ name: `hook ${i}`, url: `${DESTINATION}/hook/${i}`, events: ['token.created'] })
}

/** The admission bounds the environment sets, under the names `serve` reads (`TOKENVAULT_MAX_IN_FLIGHT_PER_TENANT`, ...). */
function admissionFromEnv(): Record<string, number> {
  const out: Record<string, number> = {}
  for (const [flag, option] of BOUND_FLAGS) {
    const value = process.env[`TOKENVAULT_${flag.toUpperCase().replaceAll('-', '_')}`]
    if (HTTP_BOUNDS.has(option) && value !== undefined) out[option] = Number(value)
  }
  return out
}

/** The child: a fresh service and HTTP server, seeded for `scenario`; sends `Seeded` to its parent. */
async function serveChild(scenario: Scenario, storeSpec: string) {
  // A clean exit on SIGTERM: a CPU profile asked for (`--cpu-prof`) is written on exit only.
  process.on('SIGTERM', () => process.exit(0))
  // The heap as `serve` sets it (TOKENVAULT_ATTACK_HEAP=v8: V8's own growing factor).
  if (process.env['TOKENVAULT_ATTACK_HEAP'] !== 'v8') tuneHeapFor(storeSpec)
  const path = storeSpec.startsWith('file:')
    ? mkdtempSync(join(storeSpec.slice(5), `attack-${scenario}-`))
    : ''
  // A postgres:// URL: its database's default schema, shared by the runs (each attack's tenants are new).
  const postgres = /^postgres(ql)?:\/\//.test(storeSpec)
  const store = postgres
    ? (await openStore(storeSpec)).store
    : path
      ? await (await import('../adapters/file/index.js')).fileStore({ path })
      : memoryStore()
  const masterKey = randomBytes(32)
  const service = await createService({
    store,
    clock: systemClock,
    masterKey,
    runner: null,
    // TOKENVAULT_ATTACK_AUDIT=off: without the audit log (what B's wait for its entry's commit costs).
    ...(process.env['TOKENVAULT_ATTACK_AUDIT'] === 'off' ? { auditLog: false } : {}),
    egress: [DESTINATION],
    egressClient: routedEgress({ [DESTINATION]: () => new Response('ok') }),
  })
  const a = await tenantKey(service, 'attacker')
  const aKey = a.key
  const bKey = (await tenantKey(service, 'bystander')).key
  const bToken = (await service.connect(bKey).tokens.create({ type: 'token', data: { name: 'b' } })).id
  const aToken = await seedAttack(scenario, service, a)
  const answer = toNodeListener(createHttpHandler(service, { log: () => {}, ...admissionFromEnv() }))
  // B's requests answered on this thread (the others went to the lane): reported with the loop delay.
  let bLocal = 0
  let bServer: number[] = []
  const local: typeof answer = (req, res) => {
    if (req.headers['svc-api-key'] === bKey) {
      bLocal++
      const t0 = performance.now()
      res.once('finish', () => bServer.push(performance.now() - t0))
    }
    answer(req, res)
  }
  // Every store is served as `tokenvault serve` serves it: with the heavy lane, unless
  // TOKENVAULT_ATTACK_LANE=off. (e)'s destination is on the lane's egress list too; the budget
  // refuses each request before anything is sent.
  // On a file store the lane's writes are committed by this thread's store, as `serve` does,
  // unless TOKENVAULT_ATTACK_FORWARD=off (the lane then commits for itself, as before); on the
  // memory store this thread answers the lane's every store call.
  const forward = path !== '' && process.env['TOKENVAULT_ATTACK_FORWARD'] !== 'off'
  const lane =
    process.env['TOKENVAULT_ATTACK_LANE'] !== 'off'
      ? new HeavyLane({
          log: () => {},
          ...(forward ? { commits: store as FileStore } : {}),
          ...(!path && !postgres ? { serves: store } : {}),
          config: {
            store: postgres ? storeSpec : path ? `file:${path}` : 'memory',
            masterKey,
            reactorEgress: [DESTINATION],
            serviceBounds: {},
            httpBounds: admissionFromEnv(),
            logFormat: 'none',
            nice: LANE_NICE,
          },
        })
      : undefined
  lane?.start()
  // B's first window alone is not shared with the lane's thread loading its modules.
  for (let i = 0; i < 600 && lane && !lane.ready; i++) await new Promise((r) => setTimeout(r, 50))
  const server = createServer(lane ? lane.listener(local) : local)
  server.keepAliveTimeout = 60_000
  server.listen(0, '127.0.0.1', () => {
    const seeded: Seeded = { port: (server.address() as AddressInfo).port, aKey, bKey, bToken, aToken }
    process.send!(seeded)
  })
  // The server's event-loop delay, from the parent's 'reset' to its 'report' (ms): how long a
  // request that is ready waits for the loop.
  const delay = monitorEventLoopDelay({ resolution: 1 })
  delay.enable()
  process.on('message', (m) => {
    if (m === 'reset') {
      delay.reset()
      bLocal = 0
      bServer = []
    }
    // Collected before each window alone: no garbage of the attack (or the seeding) is left to it.
    if (m === 'collect') {
      ;(globalThis as { gc?: () => void }).gc?.()
      process.send!('collected')
    }
    if (m !== 'report') return
    const ms = (ns: number) => ns / 1e6
    const served = bServer.sort((x, y) => x - y)
    process.send!({
      p50: ms(delay.percentile(50)),
      p99: ms(delay.percentile(99)),
      max: ms(delay.max),
      bLocal,
      bServed: [quantile(served, 0.5), quantile(served, 0.99)],
    })
  })
}

/** One HTTP request on `agent`: its status, once its answer is read whole. */
function send(
  agent: Agent,
  port: number,
  method: string,
  path: string,
  key: string,
  body?: Buffer,
  extra: Record<string, string> = {},
): Promise<number> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { 'svc-api-key': key, ...extra }
    if (body) Object.assign(headers, { 'content-type': 'application/json', 'content-length': body.length })
    const req = request({ host: '127.0.0.1', port, method, path, agent, headers }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** A's attack: `concurrency` loops sending its request until `stop`; the statuses seen, counted. */
function attack(scenario: Scenario, s: Seeded, agent: Agent, stop: { now: boolean }) {
  const json = (value: unknown) => Buffer.from(JSON.stringify(value))
  const plans: Record<
    Scenario,
    { concurrency: number; method: string; path: string; body?: Buffer; headers?: Record<string, string> }
  > = {
    a: {
      concurrency: 96,
      method: 'POST',
      path: '/tokens',
      body: json({ type: 'x', data: 'y'.repeat(400_000) }),
    },
    b: { concurrency: 8, method: 'GET', path: '/v2/tokens?size=100' },
    c: {
      concurrency: 8,
      method: 'POST',
      path: '/v2/tokens/search',
      body: json({ query: 'type:ta AND type:tb' }),
    },
    d: {
      concurrency: 8,
      method: 'POST',
      path: '/v2/tokens/search',
      body: json({ query: 'id:*a*b*c*d*e* OR id:*f*0*1*2*3* OR type:w AND id:*9*8*7*6*' }),
    },
    e: {
      concurrency: 8,
      method: 'POST',
      path: '/proxy',
      body: json({ x: `{{ ${s.aToken} | escape_once }}` }),
      headers: { 'bt-proxy-url': DESTINATION },
    },
    f: { concurrency: 32, method: 'POST', path: '/tokens', body: json({ type: 'token', data: 'small' }) },
    g: { concurrency: 32, method: 'POST', path: '/tokens', body: json({ type: 'token', data: 'hooked' }) },
  }
  const plan = plans[scenario]
  const statuses = new Map<number, number>()
  const loop = async () => {
    while (!stop.now) {
      const status = await send(agent, s.port, plan.method, plan.path, s.aKey, plan.body, plan.headers).catch(
        () => 0,
      )
      statuses.set(status, (statuses.get(status) ?? 0) + 1)
    }
  }
  const done = Promise.all(Array.from({ length: plan.concurrency }, loop))
  return { statuses, done }
}

/** B's sequential GETs of its own token for `ms`: the latencies in ms, sorted. */
async function probe(s: Seeded, agent: Agent, ms: number): Promise<number[]> {
  const out: number[] = []
  const until = performance.now() + ms
  while (performance.now() < until) {
    const started = performance.now()
    const status = await send(agent, s.port, 'GET', `/tokens/${s.bToken}`, s.bKey)
    if (status !== 200) throw new Error(`B's GET answered ${status}`)
    out.push(performance.now() - started)
  }
  return out.sort((x, y) => x - y)
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0

/** The server's event-loop delay (p50, p99, max in ms) while `measure` runs, with what it answered. */
async function loopDelay<T>(child: ChildProcess, measure: () => Promise<T>) {
  child.send('reset')
  const result = await measure()
  const delay = await new Promise<LoopDelay>((resolve) => {
    child.once('message', (m) => resolve(m as LoopDelay))
    child.send('report')
  })
  return { result, delay }
}

interface LoopDelay {
  p50: number
  p99: number
  max: number
  /** B's requests answered on the main thread (the rest went to the heavy lane). */
  bLocal: number
  /**
   * p50 and p99 of B's main-thread requests timed in the server, from its request to its answer
   * handed to the socket (ms): what of B's time the server's handling takes, the rest being the
   * loop reaching its socket and the machine's other processes.
   */
  bServed: [number, number]
}

/**
 * One attack against a fresh child server: `ROUNDS` rounds, each B alone for `ALONE_MS`, then A's
 * attack started, `WARM_MS` later B under it for `UNDER_MS`, then the attack stopped and awaited.
 * Alternating the windows lets what drifts during a run (a busy neighbour) weigh on both sides
 * alike; the server collects its garbage before each window alone, so none of the attack's (or
 * the seeding's) is left to it. Each side's samples are pooled across the rounds.
 */
async function run(scenario: Scenario, storeSpec: string) {
  const child = fork(new URL(import.meta.url).pathname, [ROLE, scenario, storeSpec], {
    // TOKENVAULT_ATTACK_NODE_ARGS: more flags for the server, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`.
    execArgv: [
      '--expose-gc',
      '--import',
      'tsx',
      ...(process.env['TOKENVAULT_ATTACK_NODE_ARGS']?.split(' ').filter(Boolean) ?? []),
    ],
  })
  // A's requests come from a process of their own: in B's, their sending and reading would
  // delay B's answers on its own event loop, which is not the server's doing.
  const attacker = fork(new URL(import.meta.url).pathname, [ATTACKER, scenario], {
    execArgv: ['--import', 'tsx'],
  })
  try {
    const s = await new Promise<Seeded>((resolve, reject) => {
      child.once('message', (m) => resolve(m as Seeded))
      child.once('exit', (code) => reject(new Error(`the server exited (${code}) before it listened`)))
    })
    const bAgent = new Agent({ keepAlive: true, maxSockets: 1 })
    await probe(s, bAgent, 500)
    const alone: number[] = []
    const under: number[] = []
    const loops = { alone: [] as LoopDelay[], under: [] as LoopDelay[] }
    const statuses = new Map<number, number>()
    let sent = 0
    for (let round = 0; round < ROUNDS; round++) {
      await collect(child)
      const quiet = await loopDelay(child, () => probe(s, bAgent, ALONE_MS))
      alone.push(...quiet.result)
      loops.alone.push(quiet.delay)
      const attacked = await underAttack(s, child, attacker, bAgent)
      under.push(...attacked.result)
      console.error(
        `(${scenario}) round ${round}: B alone ${summary(quiet.result)} (${quiet.delay.bLocal} on the main thread, ${served(quiet.delay)}); under ${summary(attacked.result)} (${attacked.delay.bLocal} on the main thread, ${served(attacked.delay)})`,
      )
      loops.under.push(attacked.delay)
      sent += attacked.sent
      for (const [k, v] of attacked.statuses) statuses.set(k, (statuses.get(k) ?? 0) + v)
    }
    bAgent.destroy()
    const sort = (xs: number[]) => xs.sort((x, y) => x - y)
    const aPerSec = sent / ((ROUNDS * UNDER_MS) / 1000)
    return { scenario, alone: sort(alone), under: sort(under), loops: worst(loops), statuses, aPerSec }
  } finally {
    child.kill()
    attacker.kill()
  }
}

/** A round's samples (ms) as `n N, p50 …, p99 …, max …`: printed to stderr as each round ends. */
/** B's main-thread requests as the server timed them (`LoopDelay.bServed`). */
const served = (d: LoopDelay) =>
  `in the server p50 ${d.bServed[0].toFixed(2)} ms, p99 ${d.bServed[1].toFixed(2)} ms`

function summary(samples: readonly number[]): string {
  const sorted = [...samples].sort((x, y) => x - y)
  const at = (q: number) =>
    (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0).toFixed(1)
  return `n ${sorted.length}, p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${at(1)} ms`
}

/** A full collection in the server, awaited. */
const collect = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    child.once('message', () => resolve())
    child.send('collect')
  })

/** `message` sent to `process`, and the next message it sends back. */
const ask = <T>(process: ChildProcess, message: AttackerMessage) =>
  new Promise<T>((resolve) => {
    process.once('message', (m) => resolve(m as T))
    process.send(message)
  })

/** What the attacker's process is asked: start attacking the seeded server, count, stop. */
type AttackerMessage = { start: Seeded } | { count: true } | { stop: true }

/**
 * One window of B's GETs under A's attack, the attack (in the attacker's process) started
 * `WARM_MS` before it and stopped after it.
 */
async function underAttack(s: Seeded, child: ChildProcess, attacker: ChildProcess, bAgent: Agent) {
  await ask(attacker, { start: s })
  await new Promise((resolve) => setTimeout(resolve, WARM_MS))
  const started = await ask<number>(attacker, { count: true })
  const measured = await loopDelay(child, () => probe(s, bAgent, UNDER_MS))
  const sent = (await ask<number>(attacker, { count: true })) - started
  const statuses = new Map(await ask<[number, number][]>(attacker, { stop: true }))
  return { ...measured, sent, statuses }
}

/** The attacker's process: A's attack on `scenario`, started, counted and stopped as its parent asks. */
function attackerChild(scenario: Scenario) {
  let now: { stop: { now: boolean }; agent: Agent; attacking: ReturnType<typeof attack> } | undefined
  process.on('message', async (m: AttackerMessage) => {
    if ('start' in m) {
      const agent = new Agent({ keepAlive: true, maxSockets: 128 })
      const stop = { now: false }
      now = { stop, agent, attacking: attack(scenario, m.start, agent, stop) }
      process.send!('started')
    } else if ('count' in m) {
      process.send!([...(now?.attacking.statuses.values() ?? [])].reduce((x, y) => x + y, 0))
    } else if (now) {
      now.stop.now = true
      await now.attacking.done
      now.agent.destroy()
      process.send!([...now.attacking.statuses])
      now = undefined
    }
  })
}

/** Each side's loop delay over its rounds: the highest p99 and max of any round. */
function worst(loops: { alone: LoopDelay[]; under: LoopDelay[] }) {
  const of = (xs: LoopDelay[]) => ({
    p50: Math.max(...xs.map((x) => x.p50)),
    p99: Math.max(...xs.map((x) => x.p99)),
    max: Math.max(...xs.map((x) => x.max)),
  })
  return { alone: of(loops.alone), under: of(loops.under) }
}

const LABELS: Record<Scenario, string> = {
  a: '(a) 96 concurrent 400 KB creates',
  b: '(b) GET /v2/tokens?size=100 over ~900 KB tokens',
  c: `(c) search type:ta AND type:tb over ${sizeOf('TOKENVAULT_ATTACK_SEARCH_TOKENS', 5000)} tokens`,
  d: `(d) wildcard searches over ${sizeOf('TOKENVAULT_ATTACK_WILDCARD_TOKENS', 5000)} tokens`,
  e: '(e) proxy detokenize escape_once over ~1 MB',
  f: '(f) 32 concurrent small creates',
  g: "(g) 32 concurrent small creates, each delivered to A's five webhooks",
}

async function main() {
  const args = process.argv.slice(2)
  const at = (flag: string) => (args.includes(flag) ? args[args.indexOf(flag) + 1] : undefined)
  const storeSpec = at('--store') ?? 'memory'
  const only = (at('--only') ?? 'a,b,c,d,e,f,g').split(',') as Scenario[]
  console.log(
    `store: ${storeSpec}; B: sequential GET /tokens/{id}, ${ROUNDS} rounds of ${ALONE_MS / 1000} s alone then ${UNDER_MS / 1000} s under attack; loop delay: the worst round's`,
  )
  console.log(
    '| attack | B p50 alone | B p99 alone | B p50 under | B p99 under | p99 ratio | A answers (status: count) | A req/s | server loop delay p99 / max, alone; under |',
  )
  console.log('|---|---|---|---|---|---|---|---|---|')
  for (const scenario of only) {
    const r = await run(scenario, storeSpec)
    const ms = (v: number) => `${v.toFixed(1)} ms`
    const ratio = quantile(r.under, 0.99) / quantile(r.alone, 0.99)
    const statuses = [...r.statuses]
      .sort(([x], [y]) => x - y)
      .map(([k, v]) => `${k}: ${v}`)
      .join(', ')
    console.log(
      `| ${LABELS[scenario]} | ${ms(quantile(r.alone, 0.5))} | ${ms(quantile(r.alone, 0.99))} | ${ms(quantile(r.under, 0.5))} | ${ms(quantile(r.under, 0.99))} | ${ratio.toFixed(1)}x${ratio > 2 ? ' (over 2x)' : ''} | ${statuses} | ${r.aPerSec.toFixed(0)} | ${ms(r.loops.alone.p99)} / ${ms(r.loops.alone.max)}; ${ms(r.loops.under.p99)} / ${ms(r.loops.under.max)} |`,
    )
  }
}

if (process.argv.includes(ROLE)) {
  const at = process.argv.indexOf(ROLE)
  await serveChild(process.argv[at + 1] as Scenario, process.argv[at + 2]!)
} else if (process.argv.includes(ATTACKER)) {
  attackerChild(process.argv[process.argv.indexOf(ATTACKER) + 1] as Scenario)
} else {
  await main()
}
