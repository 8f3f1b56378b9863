import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createHttpHandler, type HttpLogEvent, toNodeListener } from '../adapters/http/index.js'
import { isTestControlPath, testControlHandler } from '../adapters/http/test-control.js'
import { sandboxRunner } from '../adapters/sandbox/index.js'
import {
  createService,
  type ManualClock,
  manualClock,
  type Service,
  type StateSnapshot,
  systemClock,
} from '../src/index.js'
import { PERMISSIONS_BY_TYPE } from '../src/schemas/access.js'
import type { Permission } from '../src/types.js'
import { unchecked } from '../src/unchecked.js'
import { openStore } from './stores.js'

/** Options of `serve`. */
export interface ServeOptions {
  port: number
  host: string
  /** A `--store` value: `memory`, `file:PATH` or a `postgres://` URL. */
  store: string
  /** Accept only this header prefix (`SVC`, `BT`); default: both. */
  headerPrefix?: string
  /** The master key (32 bytes); without it a persistent store is refused, a memory store uses a random one. */
  masterKey?: Uint8Array
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
  adminToken?: string
  /** A fixture (parsed JSON) loaded at start when the store is empty, in any mode. */
  seed?: unknown
}

/** A running server. */
export interface Serving {
  /** `http://HOST:PORT`, with the port actually bound. */
  url: string
  /** Stops accepting, lets requests in flight finish (at most `graceMs`), then closes the service and store. */
  close(graceMs?: number): Promise<void>
}

const MANAGEMENT_PERMISSIONS: Permission[] = [...PERMISSIONS_BY_TYPE.management]

/** How often expired sessions and transactions are swept, in milliseconds. */
export const SWEEP_INTERVAL_MS = 30_000

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

/** A log line as JSON: time, level, and the event's fields (never keys, nonces or token data). */
function jsonEvent(event: HttpLogEvent): string {
  const time = isoNow()
  if (event.kind === 'request') {
    const level = event.status >= 500 ? 'error' : event.status >= 400 ? 'warn' : 'info'
    return JSON.stringify({
      time,
      level,
      method: event.method,
      path: event.path,
      status: event.status,
      ms: Number(event.ms.toFixed(1)),
    })
  }
  const error =
    event.error instanceof Error ? `${event.error.name}: ${event.error.message}` : String(event.error)
  return JSON.stringify({ time, level: 'error', method: event.method, path: event.path, error })
}

/** The flushes of every buffered log of this process, run once more as it exits. */
const pendingLogs = new Set<() => void>()
let flushOnExit = false

/**
 * A writer that buffers lines and writes them together, off the request path: at most every
 * `delayMs` (default 20 ms), at once past `maxChars` (default 32 Ki characters), and when the
 * process exits (then synchronously: stderr on a file or pipe is written synchronously). Under load
 * one write carries hundreds of lines instead of one write per line or per turn of the event loop.
 * Answers the line writer, `flush`, and `close` (flushes and stops watching for the exit).
 */
export function bufferedLog(
  write: (text: string) => void,
  { delayMs = 20, maxChars = 32 * 1024 }: { delayMs?: number; maxChars?: number } = {},
): { log: (line: string) => void; flush: () => void; close: () => void } {
  let pending = ''
  let timer: ReturnType<typeof setTimeout> | undefined
  const flush = () => {
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
    if (pending === '') return
    const text = pending
    pending = ''
    write(text)
  }
  pendingLogs.add(flush)
  if (!flushOnExit) {
    flushOnExit = true
    process.once('exit', () => {
      for (const pendingFlush of pendingLogs) pendingFlush()
    })
  }
  const log = (line: string) => {
    pending += `${line}\n`
    if (pending.length >= maxChars) flush()
    else if (timer === undefined) {
      timer = setTimeout(flush, delayMs)
      timer.unref()
    }
  }
  const close = () => {
    flush()
    pendingLogs.delete(flush)
  }
  return { log, flush, close }
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
function formatEvent(event: HttpLogEvent): string {
  if (event.kind === 'request') {
    return `${isoNow()} ${event.method} ${event.path} ${event.status} ${event.ms.toFixed(1)}ms`
  }
  const error =
    event.error instanceof Error ? (event.error.stack ?? event.error.message) : String(event.error)
  return `${isoNow()} ${event.method} ${event.path} failed: ${error}`
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
  const stderr = options.log ? undefined : bufferedLog((text) => process.stderr.write(text))
  const log = options.log ?? stderr!.log
  const opened = await openStore(options.store, { log })
  const runner = sandboxRunner()
  const clock = options.testMode ? manualClock(systemClock.now()) : systemClock
  let service: Service
  try {
    service = createService({
      store: opened.store,
      clock,
      runner,
      ...(options.masterKey ? { masterKey: options.masterKey } : {}),
      ...(options.reactorEgress?.length ? { reactorEgress: options.reactorEgress } : {}),
    })
    await service.admin.verifyMasterKey()
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
    if (options.testMode) initial = await service.admin.exportState()
  } catch (error) {
    await service.close()
    await opened.release()
    throw error
  }

  const handler = createHttpHandler(service, {
    ...(options.headerPrefix ? { headerPrefix: options.headerPrefix } : {}),
    ...(options.corsOrigins ? { cors: { origins: options.corsOrigins } } : {}),
    ...(options.logFormat === 'none'
      ? { log: () => {} }
      : {
          log: (event: HttpLogEvent) =>
            log(options.logFormat === 'json' ? jsonEvent(event) : formatEvent(event)),
        }),
  })
  const api = toNodeListener(handler)
  let adminToken: string | undefined
  let listener = api
  if (options.testMode) {
    adminToken = options.adminToken ?? `adm_${randomBytes(24).toString('base64url')}`
    const control = toNodeListener(
      testControlHandler(service, {
        clock: clock as ManualClock,
        adminToken,
        ...(initial ? { initial } : {}),
      }),
    )
    listener = (req, res) => (isTestControlPath((req.url ?? '').split('?')[0]!) ? control : api)(req, res)
  }
  const server = createServer(listener)
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
  print(`listening on ${url}`)
  if (key) print(`management key: ${key}`)
  if (options.testMode && !options.adminToken) print(`admin token: ${adminToken}`)

  const sweep = setInterval(() => {
    service.admin.sweep().catch((error: unknown) => log(`sweep failed: ${String(error)}`))
  }, SWEEP_INTERVAL_MS)
  sweep.unref()

  let closing: Promise<void> | undefined
  const close = (graceMs = 5_000) => {
    closing ??= (async () => {
      clearInterval(sweep)
      const closed = new Promise((resolve) => server.close(resolve))
      server.closeIdleConnections()
      const force = setTimeout(() => server.closeAllConnections(), graceMs)
      force.unref()
      await closed
      clearTimeout(force)
      await service.close()
      await opened.release()
      stderr?.close()
    })()
    return closing
  }
  return { url, close }
}
