import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { setFlagsFromString } from 'node:v8'
import { nanoid } from 'nanoid'
import { egressFetch } from '../adapters/egress/index.js'
import type { FileStore } from '../adapters/file/index.js'
import { faultRegistry, withFaults } from '../adapters/http/faults.js'
import { createHttpHandler, type HttpLogEvent, toNodeListener } from '../adapters/http/index.js'
import { RequestLog } from '../adapters/http/request-log.js'
import { loggedFaults } from '../adapters/http/request-view.js'
import { isTestControlPath, testControlHandler } from '../adapters/http/test-control.js'
import { sandboxRunner } from '../adapters/sandbox/index.js'
import {
  createService,
  type ManualClock,
  manualClock,
  type Service,
  type StateSnapshot,
  systemClock,
  type TestService,
} from '../entry/index.js'
import { PERMISSIONS_BY_TYPE } from '../src/applications/index.js'
import type { EgressClient, Permission } from '../src/kernel/index.js'
import { shiftedClock } from '../src/kernel/index.js'
import { unchecked } from '../src/service/index.js'
import type { Store } from '../src/store/index.js'
import { type Destinations, destinations } from '../testing/destinations.js'
import { DEFAULT_CONNECTION_LIMITS } from './connections.js'
import { drainingServer } from './drain.js'
import { HeavyLane, LANE_NICE } from './heavy-lane.js'
import { fdSink } from './log-sink.js'
import { type BoundOption, HTTP_BOUNDS, SERVER_BOUNDS } from './options.js'
import { openStoreWaiting } from './stores.js'
import { webhookTicker } from './webhook-ticker.js'

/** Options of `serve`. */
export interface ServeOptions {
  port: number
  host: string
  /** A `--store` value: `memory`, `file:PATH` or a `postgres://` URL. */
  store: string
  /** Accept only this header prefix (`SVC`, `BT`); default: both. */
  headerPrefix?: string
  /**
   * The master key (32 bytes), or what loads it: called once the store opened, so that nothing (a new
   * key file) is written for a store that fails to open. Without it a persistent store is refused, a
   * memory store uses a random one.
   */
  masterKey?: Uint8Array | (() => Uint8Array)
  /** Milliseconds to keep trying a store that is not reachable yet (see `openStoreWaiting`). @default 0 */
  storeWaitMs?: number
  /** Aborted to stop start-up (a signal before listening): the store wait ends, the store is released. */
  signal?: AbortSignal
  /** Origins whose browser apps may call the API (CORS); `*` for any. */
  corsOrigins?: readonly string[]
  /** The egress allow-list (`reactorEgress` of `createService`): origins formulas and callbacks may reach. */
  reactorEgress?: readonly string[]
  /** On an empty store, the management application gets this key instead of a random one. */
  managementKey?: string
  /** The request and error log: `text` lines, `json` lines, or `none` (default `text`). */
  logFormat?: 'text' | 'json' | 'none'
  /** Where the startup lines go (default stdout). */
  print?: (line: string) => void
  /** Where request and error lines go (default stderr). */
  log?: (line: string) => void
  /**
   * Test mode: a manual clock starting at the real time, and the `/_test/` control plane behind
   * `adminToken` (generated and printed when not given). Off by default: then `/_test/` is 404.
   */
  testMode?: boolean
  /**
   * The RSA private key (PEM) webhook deliveries are signed with (see `ServiceOptions.webhookSigningKey`);
   * a function when its file is still to be made, called once the store opened (as `masterKey`).
   */
  webhookSigningKey?: string | (() => string)
  adminToken?: string
  /**
   * Test mode: origins answered in this process by an echo destination that keeps what it received
   * (`GET /_test/proxy`, cleared by reset); each is put on the egress list. Nothing else changes:
   * other origins of the egress list are reached over the network.
   */
  testDestinations?: readonly string[]
  /**
   * The test mode's clock: `manual` stands still until the control plane moves it; `ticking` runs
   * with the real time and jumps when moved (a time shift). @default 'manual'
   */
  testClock?: 'manual' | 'ticking'
  /**
   * Outside test mode, on every store: the keys whose requests are slow are answered by a worker
   * thread of their own (`bin/heavy-lane.ts`); false answers every request on the main thread.
   * @default true
   */
  heavyLane?: boolean
  /** A fixture (parsed JSON) loaded at start when the store is empty, in any mode. */
  seed?: unknown
  /** Milliseconds the listener keeps serving after shutdown begins, `/readyz` answering 503. @default 0 */
  shutdownDelayMs?: number
  /** Milliseconds requests in flight get once the listener stopped. @default 5000 */
  shutdownGraceMs?: number
  /**
   * The per-tenant bounds of `createService` and of the HTTP handler's admission (see `BOUND_FLAGS`);
   * each absent one keeps its default.
   */
  bounds?: Partial<Record<BoundOption, number>>
}

/** A running server. */
export interface Serving {
  /** `http://HOST:PORT`, with the port actually bound. */
  url: string
  /**
   * Shuts down: serves on for the shutdown delay (readiness 503), stops accepting, lets requests in
   * flight finish (at most `graceMs`, default the `shutdownGraceMs` option), then closes the service
   * and store. Later calls answer the same promise.
   */
  close(graceMs?: number): Promise<void>
  /** Ends what is left of the shutdown delay now; requests in flight are still answered. */
  hurry(): void
}

const MANAGEMENT_PERMISSIONS: Permission[] = [...PERMISSIONS_BY_TYPE.management]

/** How often expired sessions and transactions are swept, in milliseconds. */
export const SWEEP_INTERVAL_MS = 30_000

/**
 * How much V8 lets a heap grow past what its last full collection kept before it starts the next,
 * for a server on a file or PostgreSQL store (whose data is not in the heap, so its heap is small:
 * about 20 MB). V8's own factor, about 1.1-1.5 under load, had the main thread run about 60 full
 * collections in a run of `npm run bench:attacks -- --only a --store file:DIR`, each a pause of 4-14
 * ms every ~140 ms that another tenant's GETs wait out; at 300 % about 6. Not on the memory store,
 * whose heap holds every token: 4 times its size is too much memory to give.
 */
export const HEAP_GROWING_PERCENT = 300

/**
 * Sets `HEAP_GROWING_PERCENT` for the process when `store` is not `memory`: V8 reads it at each full
 * collection, so it applies from the next one on, to every thread's heap (the lane's too).
 */
export function tuneHeapFor(store: string, set: (flags: string) => void = setFlagsFromString): void {
  if (store !== 'memory') set(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`)
}

/**
 * On a store that holds no tenant yet, creates one and a management application, and answers the
 * application's key (shown this once); otherwise null.
 */
async function bootstrap(
  service: Service,
  isEmpty: () => Promise<boolean>,
  managementKey: string | undefined,
): Promise<string | null> {
  if (!(await isEmpty())) return null
  const tenant = await service.admin.createTenant({ name: 'default' })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'management',
    type: 'management',
    permissions: MANAGEMENT_PERMISSIONS,
    ...(managementKey ? { key: managementKey } : {}),
  })
  return key
}

/**
 * A log line as JSON: time, level, and the event's fields (never keys, nonces or token data);
 * `"lane": true` on what the heavy lane's thread answered (`onLane`).
 */
export function jsonEvent(event: HttpLogEvent, onLane = false): string {
  const time = isoNow()
  const lane = onLane ? { lane: true } : {}
  if (event.kind === 'request') {
    const level = event.status >= 500 ? 'error' : event.status >= 400 ? 'warn' : 'info'
    return JSON.stringify({
      time,
      level,
      method: event.method,
      path: event.path,
      status: event.status,
      ms: Number(event.ms.toFixed(1)),
      request_id: event.requestId,
      ...lane,
    })
  }
  const error =
    event.error instanceof Error ? `${event.error.name}: ${event.error.message}` : String(event.error)
  return JSON.stringify({
    time,
    level: event.expected ? 'warn' : 'error',
    method: event.method,
    path: event.path,
    error,
    request_id: event.requestId,
    ...lane,
  })
}

let stampMs = Number.NaN
let stamp = ''

/** The current time as ISO 8601, formatted once per millisecond. */
function isoNow(): string {
  const ms = Date.now()
  if (ms !== stampMs) {
    stampMs = ms
    stamp = new Date(ms).toISOString()
  }
  return stamp
}

/** One line per request: time, method, path (no query string), status, milliseconds. No keys, no data. */
export function formatEvent(event: HttpLogEvent): string {
  if (event.kind === 'request') {
    return `${isoNow()} ${event.method} ${event.path} ${event.status} ${event.ms.toFixed(1)}ms id=${event.requestId}`
  }
  // An expected failure (a store unavailable, answered 503) is one line; an unexpected one has its stack.
  const error =
    event.error instanceof Error
      ? event.expected
        ? `${event.error.name}: ${event.error.message}`
        : (event.error.stack ?? event.error.message)
      : String(event.error)
  // One line each, the request id on it: a stack's frames are joined with ' | '.
  return `${isoNow()} ${event.method} ${event.path} id=${event.requestId} failed: ${error.replace(/\s*\n\s*/g, ' | ')}`
}

/**
 * What `serve` prints once listening: the URL, the management key (first start only), the admin
 * token (test mode), which header carries the key, a first request, and where the docs are. JSON
 * objects, one a line, when the log is JSON.
 */
export function startLines(o: {
  url: string
  key: string | null
  adminToken: string | undefined
  headerPrefix: string | undefined
  json: boolean
  /** Test mode: the console's address is printed too. */
  testMode?: boolean
}): string[] {
  const header = o.headerPrefix ? `${o.headerPrefix.toUpperCase()}-API-KEY` : 'SVC-API-KEY'
  const headers = o.headerPrefix ? header : 'SVC-API-KEY (or BT-API-KEY, as the Basis Theory SDKs send)'
  const curl = `curl -H '${header}: ${o.key ?? '<management key>'}' ${o.url}/applications`
  const docs = `${o.url}/openapi.json (OpenAPI 3.1); options: tokenvault --help; guide: README.md`
  if (o.json) {
    const time = isoNow()
    const line = (fields: Record<string, unknown>) => JSON.stringify({ time, level: 'info', ...fields })
    return [
      line({ msg: 'listening', url: o.url }),
      ...(o.key ? [line({ msg: 'management key', key: o.key })] : []),
      ...(o.adminToken ? [line({ msg: 'admin token', token: o.adminToken })] : []),
      line({ msg: 'api key header', header: headers }),
      line({ msg: 'try', command: curl }),
      line({ msg: 'docs', openapi: `${o.url}/openapi.json`, help: 'tokenvault --help', guide: 'README.md' }),
      ...(o.testMode ? [line({ msg: 'console', url: `${o.url}/_console/` })] : []),
    ]
  }
  return [
    `listening on ${o.url}`,
    ...(o.key ? [`management key: ${o.key}`] : []),
    ...(o.adminToken ? [`admin token: ${o.adminToken}`] : []),
    `api key header: ${headers}`,
    `try: ${curl}`,
    `docs: ${docs}`,
    ...(o.testMode ? [`console: ${o.url}/_console/`] : []),
  ]
}

/**
 * The bounds of `createService`, those of `createHttpHandler` (`HTTP_BOUNDS`) and the listener's
 * (`SERVER_BOUNDS`), apart.
 */
function splitBounds(bounds: Partial<Record<BoundOption, number>>) {
  const service: Partial<Record<BoundOption, number>> = {}
  const http: Partial<Record<BoundOption, number>> = {}
  const server: Partial<Record<BoundOption, number>> = {}
  for (const [name, value] of Object.entries(bounds) as [BoundOption, number][]) {
    const into = HTTP_BOUNDS.has(name) ? http : SERVER_BOUNDS.has(name) ? server : service
    into[name] = value
  }
  return [service, http, server] as const
}

const urlHost = (host: string) => (host.includes(':') ? `[${host}]` : host)

/**
 * Serves the HTTP API on node:http over the store `options.store` names, with formula code run by
 * the sandbox runner. Prints `listening on http://HOST:PORT`, and on the first start of an empty
 * store creates a tenant and a management application and prints `management key: key_...`.
 * Sweeps expired sessions and transactions every 30 s.
 */
export async function serve(options: ServeOptions): Promise<Serving> {
  const print = options.print ?? ((line) => process.stdout.write(`${line}\n`))
  // The log goes to stderr through the thread pool: a slow reader of the log never stops requests.
  const sink = options.log ? undefined : fdSink(2)
  const flushOnExit = () => sink?.flushSync()
  if (sink) process.once('exit', flushOnExit)
  const log = options.log ?? ((line: string) => sink!.write(`${line}\n`))
  /** A line of the server's own (not a request's): a JSON object in JSON mode. */
  const note = (line: string, level = 'info') =>
    log(options.logFormat === 'json' ? JSON.stringify({ time: isoNow(), level, msg: line }) : line)
  tuneHeapFor(options.store)
  const opened = await openStoreWaiting(options.store, {
    serving: true,
    log: note,
    waitMs: options.storeWaitMs ?? 0,
    ...(options.signal ? { signal: options.signal } : {}),
  })
  let masterKey: Uint8Array | undefined
  let signingKey: string | undefined
  try {
    // Only now that the store opened: a key file created for a store that never opens would be litter.
    masterKey = typeof options.masterKey === 'function' ? options.masterKey() : options.masterKey
    const signing = options.webhookSigningKey
    signingKey = typeof signing === 'function' ? signing() : signing
  } catch (error) {
    await opened.release()
    throw error
  }
  // In test mode the control plane checks leaks against what the vault holds: it opens what the
  // service seals, so it needs the key (a memory store without one gets a random one here, as
  // the service would make itself).
  if (options.testMode) masterKey ??= randomBytes(32)
  // Test mode keeps one clock and one request log: its requests stay on this thread.
  const laneOn = !options.testMode && options.heavyLane !== false
  // The lane's service opens what this one seals in the memory store: one key for both, never written.
  if (laneOn && options.store === 'memory') masterKey ??= randomBytes(32)
  const insight = options.testMode
    ? (await import('../testing/insight/server.js')).serverInsight(opened.store, masterKey!)
    : undefined
  const runner = sandboxRunner()
  const routed = options.testMode
    ? destinations(Object.fromEntries((options.testDestinations ?? []).map((origin) => [origin, 'echo'])))
    : undefined
  const [serviceBounds, httpBounds, serverBounds] = splitBounds(options.bounds ?? {})
  const clock = !options.testMode
    ? systemClock
    : options.testClock === 'ticking'
      ? shiftedClock()
      : manualClock(systemClock.now())
  let service: Service
  /** The same service when in test mode: only then has its admin the test powers (the control plane's). */
  let testService: TestService | undefined
  try {
    const serviceOptions = {
      store: insight ? insight.store : opened.store,
      ...(insight ? { observe: insight.observe } : {}),
      clock,
      runner,
      ...(masterKey ? { masterKey } : {}),
      ...(signingKey ? { webhookSigningKey: signingKey } : {}),
      ...egressOf(options, routed),
      ...serviceBounds,
    }
    if (options.testMode) {
      service = testService = createService({ ...serviceOptions, testMode: true })
      // The test destinations are on the allow-list while they are routed (the control plane adds more).
      if (routed) testService.admin.allowTestEgress(routed.origins)
    } else service = createService(serviceOptions)
    await service.admin.verifyMasterKey()
    await insight?.load()
  } catch (error) {
    await runner.close()
    await opened.release()
    throw error
  }
  let key: string | null
  let initial: StateSnapshot | undefined
  try {
    const empty = !(await opened.store.hasTenants())
    key = await bootstrap(service, async () => empty, options.managementKey)
    if (empty && options.seed !== undefined) await unchecked(service.admin).loadFixture(options.seed)
    // What the control plane's reset goes back to: the state right after start.
    if (testService) initial = await testService.admin.exportState()
  } catch (error) {
    await service.close()
    await opened.release()
    throw error
  }

  // Test mode keeps a log of every exchange for the console and `GET /_test/requests`.
  const requests = testService ? new RequestLog({ now: () => clock.now() }) : undefined
  const handler = createHttpHandler(service, {
    ...(requests ? { requestLog: requests } : {}),
    ...(options.headerPrefix ? { headerPrefix: options.headerPrefix } : {}),
    ...(options.corsOrigins ? { cors: { origins: options.corsOrigins } } : {}),
    ...(options.testMode ? { documentTestControl: true } : {}),
    ...httpBounds,
    ...(options.logFormat === 'none'
      ? { log: () => {} }
      : {
          log: (event: HttpLogEvent) =>
            log(options.logFormat === 'json' ? jsonEvent(event) : formatEvent(event)),
        }),
  })
  let api = toNodeListener(handler)
  let adminToken: string | undefined
  let listener = api
  if (testService) {
    adminToken = options.adminToken ?? `adm_${nanoid(32)}`
    const faults = loggedFaults(faultRegistry(), requests!)
    api = withFaults(api, faults)
    const control = toNodeListener(
      testControlHandler(testService, {
        clock: clock as ManualClock,
        adminToken,
        faults,
        requests: requests!,
        log: (line: string) => note(line),
        ...(initial ? { initial } : {}),
        ...(insight ? { insight: insight.control } : {}),
        ...(routed ? { proxy: routed } : {}),
      }),
    )
    listener = (req, res) => (isTestControlPath((req.url ?? '').split('?')[0]!) ? control : api)(req, res)
  }
  const committer = forwardedCommits(opened.store)
  const lane =
    laneOn && !testService
      ? new HeavyLane({
          log: note,
          // A file store: the lane's writes are committed here, one writer for the process.
          ...(committer ? { commits: committer } : {}),
          // The memory store: the lane's every call is answered here, by the one copy of the data.
          ...(options.store === 'memory' ? { serves: opened.store } : {}),
          config: {
            store: options.store,
            ...(masterKey ? { masterKey } : {}),
            ...(signingKey ? { webhookSigningKey: signingKey } : {}),
            ...(options.reactorEgress ? { reactorEgress: options.reactorEgress } : {}),
            serviceBounds,
            httpBounds,
            ...(options.headerPrefix ? { headerPrefix: options.headerPrefix } : {}),
            ...(options.corsOrigins ? { corsOrigins: options.corsOrigins } : {}),
            logFormat: options.logFormat ?? 'text',
            nice: LANE_NICE,
          },
        })
      : undefined
  if (lane) {
    // Started now, in the background: ready before the first heavy key, not after its first requests.
    lane.start()
    listener = lane.listener(api)
  }
  const { server, shutdown, hurry } = drainingServer(listener, {
    ...DEFAULT_CONNECTION_LIMITS,
    ...serverBounds,
  })
  server.listen(options.port, options.host)
  try {
    await Promise.race([
      once(server, 'listening'),
      once(server, 'error').then(([error]) => Promise.reject(error)),
    ])
  } catch (error) {
    await service.close()
    await opened.release()
    throw error
  }
  const { port } = server.address() as AddressInfo
  const url = `http://${urlHost(options.host)}:${port}`
  for (const line of startLines({
    url,
    key,
    adminToken: options.testMode && !options.adminToken ? adminToken : undefined,
    testMode: options.testMode === true,
    headerPrefix: options.headerPrefix,
    json: options.logFormat === 'json',
  }))
    print(line)

  // One sweep at a time: a sweep longer than the interval is not joined by the next.
  let sweeping = false
  const sweep = setInterval(() => {
    if (sweeping) return
    sweeping = true
    service.admin
      .sweep()
      .then(
        (counts) => {
          // Each failed step or record was skipped and the rest swept; say which (ids and error names only).
          const shown = (counts.failures ?? [])
            .slice(0, 5)
            .map((f) => `${f.step}${f.id ? ` ${f.id}` : ''}: ${f.error}`)
          if (counts.failed) note(`sweep: ${counts.failed} failed and skipped (${shown.join('; ')})`, 'error')
        },
        (error: unknown) => note(`sweep failed: ${String(error)}`, 'error'),
      )
      .finally(() => {
        sweeping = false
      })
  }, SWEEP_INTERVAL_MS)
  sweep.unref()
  // Webhook deliveries and callbacks whose time has come (a restart's pending ones at once, then
  // back-offs as they end) go out from this ticker; a write's first attempt needs no tick.
  const deliveries = webhookTicker(service, (error) =>
    note(`webhook deliveries failed: ${String(error)}`, 'error'),
  )

  let closing: Promise<void> | undefined
  /**
   * Shuts down without resetting a request (see `drainingServer`): /readyz answers 503 and every
   * answer closes its connection at once; the listener serves on for the shutdown delay, then stops;
   * requests in flight get `graceMs`; then the service and the store close.
   */
  const close = (graceMs = options.shutdownGraceMs ?? 5_000) => {
    closing ??= (async () => {
      clearInterval(sweep)
      deliveries.stop()
      const { unanswered } = await shutdown({ delayMs: options.shutdownDelayMs ?? 0, graceMs })
      if (unanswered > 0)
        note(
          `shutdown: ${unanswered} request(s) still unanswered after the ${graceMs} ms grace were closed`,
          'warn',
        )
      await lane?.close()
      await service.close()
      await opened.release()
      await sink?.drained()
      process.off('exit', flushOnExit)
    })()
    return closing
  }
  return { url, close, hurry }
}

/**
 * The egress options of the service: the allow-list, plus in test mode the test destinations, which
 * are answered in the process (every other origin goes over the network, as without them).
 */
function egressOf(options: ServeOptions, routed: Destinations | undefined) {
  const listed = [...(options.reactorEgress ?? [])]
  if (!routed) return listed.length ? { reactorEgress: listed } : {}
  // Test mode: an origin routed now (at start or by `POST /_test/proxy/destinations`) is answered in
  // the process; any other goes over the network, as without test destinations.
  const egressClient: EgressClient = (origins, request, limits) =>
    routed.origins.includes(new URL(request.url).origin)
      ? routed.client(origins, request, limits)
      : egressFetch(origins, request, limits)
  return { reactorEgress: listed, egressClient }
}

/** The store that commits the heavy lane's writes: a file store's (`commitForwarded`); none for others. */
function forwardedCommits(store: Store): Pick<FileStore, 'commitForwarded'> | undefined {
  const commit = (store as Partial<FileStore>).commitForwarded
  return typeof commit === 'function' ? { commitForwarded: commit } : undefined
}
