import { timingSafeEqual } from 'node:crypto'
import { nanoid } from 'nanoid'
import { type ManualClock, ServiceError } from '../../src/kernel/index.js'
import type { StateSnapshot } from '../../src/lifecycle/index.js'
import { type JournalQuery, type TestService, unchecked } from '../../src/service/index.js'
import { consoleHandler, isConsolePath } from './console.js'
import type { FaultRegistry } from './faults.js'
import type { FetchHandler } from './handler.js'
import { logControl } from './log-routes.js'
import { internalError, problemFor } from './problem.js'
import { type ProxyControl, proxyControlRoute } from './proxy-control.js'
import type { RequestLog } from './request-log.js'
import { markName, requestQuery, requestViews } from './request-view.js'
import { decodedSegment } from './router.js'
import { type ControlInsight, insightRoute } from './test-insight.js'
import { webhookControl } from './webhook-routes.js'

/** Options of `testControlHandler`. */
export interface TestControlOptions {
  /** The clock the service runs on: the control plane moves it. */
  clock: ManualClock
  /** What `Authorization: Bearer <adminToken>` must carry. */
  adminToken: string
  /** The state `POST /_test/reset` goes back to (default: empty). */
  initial?: StateSnapshot
  /** Largest request body (a snapshot or fixture) in bytes. Default 64 MiB. */
  maxBodyBytes?: number
  /**
   * Takes one line per control-plane call: method, path, status (and the clock's time after a
   * move); never a body (snapshots hold token data in the clear).
   */
  log?: (line: string) => void
  /**
   * Leak checks, exposure and used access (`POST /_test/leaks`, `GET /_test/exposure`,
   * `GET /_test/used-access`; see `insightRoute`); without it those paths are 404.
   */
  insight?: ControlInsight
  /** The faults `/_test/faults` manages (apply them to the API with `withFaults`); without it that path is 404. */
  faults?: FaultRegistry
  /**
   * The request log the API's handler records into (`HttpHandlerOptions.requestLog`): served as
   * `GET /_test/requests` and in the console, marked by `POST /_test/mark`; control-plane calls
   * are recorded in it too. Without it those paths are 404.
   */
  requests?: RequestLog
  /**
   * The in-process test destinations: `GET /_test/proxy` answers what they received,
   * `/_test/proxy/destinations` registers, lists and removes them (see `proxyControlRoute`); a reset
   * goes back to those of the start. Without it those paths are 404.
   */
  proxy?: ProxyControl
}

/** Whether `path` is one of the control plane's (`/_test/...`, and the console's `/_console/...`). */
export const isTestControlPath = (path: string): boolean =>
  path === '/_test' || path.startsWith('/_test/') || isConsolePath(path)

const json = (status: number, body: unknown) =>
  new Response(body === undefined ? null : JSON.stringify(body), {
    status,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
  })
const problem = (status: number, title: string, detail: string, extra: Record<string, unknown> = {}) =>
  new Response(JSON.stringify({ type: 'about:blank', title, status, detail, ...extra }), {
    status,
    headers: { 'content-type': 'application/problem+json' },
  })

/** A constant-time comparison of the bearer token with the admin token. */
function authorized(request: Request, token: string): boolean {
  const given = /^Bearer (.+)$/.exec(request.headers.get('authorization') ?? '')?.[1] ?? ''
  const a = Buffer.from(given)
  const b = Buffer.from(token)
  return a.length === b.length && timingSafeEqual(a, b)
}

/**
 * The control plane for test suites in any language, under `/_test/`, behind an admin token:
 *
 * - `GET /_test/clock` → `{ now }`; `POST /_test/clock` with `{ "advance_ms": n }` or `{ "set": ISO }`
 *   moves the manual clock (never backwards past nothing: any ISO time is allowed) and runs the
 *   sweep, so sessions, transactions and tokens expire exactly as time would → `{ now, swept }`;
 * - `POST /_test/reset` → 204, back to `initial`, with the journal and the faults cleared
 *   (`?journal=keep` keeps the journal); `POST /_test/snapshot` → the whole state
 *   (a `StateSnapshot`: token data in the clear); `POST /_test/restore` with a snapshot → 204;
 * - `POST /_test/fixture` with a fixture → 201 `{ tenants }`;
 * - `GET /_test/journal?operation=&since=&tenant=&limit=` → `{ data: [...] }`;
 * - `POST /_test/faults` with `{ method?, path, status?, times?, delay_ms? }` → 201 the fault: the
 *   next `times` (default 1) requests matching it wait `delay_ms` and answer `status`;
 *   `GET /_test/faults` → `{ data: [...] }`; `DELETE /_test/faults` → 204, all cleared.
 * - `GET /_test/requests?after=&tenant=&failed=&mark=&limit=` → `{ data: [...] }`: the request log
 *   (see `RequestLogEntry`), names beside ids, each with its journal entries;
 *   `GET /_test/requests/{request id}` → one; `POST /_test/mark` `{ name }` → 201: later entries
 *   carry `mark: name`.
 *
 * Without the token: 401. Bad input: a 400 problem that changes nothing. Any other path: 404.
 * It also serves the test console under `/_console/` (see `consoleHandler`).
 */
export function testControlHandler(service: TestService, options: TestControlOptions): FetchHandler {
  const maxBody = options.maxBodyBytes ?? 64 * 1024 * 1024
  const body = async (request: Request): Promise<unknown> => {
    const text = await boundedText(request, maxBody)
    if (text.trim() === '') return {}
    try {
      return JSON.parse(text)
    } catch {
      throw new ServiceError('validation_failed', 'the body is not JSON', { issues: { body: ['not JSON'] } })
    }
  }
  const route = async (method: string, path: string, request: Request): Promise<Response> => {
    const state = await stateRoute(service, options, method, path, request, body)
    if (state) return state
    if (path === '/_test/faults' && options.faults) {
      if (method === 'POST') return json(201, options.faults.add(await body(request)))
      if (method === 'GET') return json(200, { data: options.faults.list() })
      if (method === 'DELETE') {
        options.faults.clear()
        return json(204, undefined)
      }
    }
    const insight =
      options.insight &&
      (await insightRoute(options.insight, method, path, request, () => boundedText(request, maxBody)))
    if (insight) return insight
    if (path === '/_test/journal' && method === 'GET') return json(200, { data: journalOf(service, request) })
    const requests =
      options.requests && (await requestsRoute(service, options.requests, method, path, request, body))
    if (requests) return requests
    const proxied = await proxyControlRoute(
      options.proxy,
      method,
      path,
      request,
      () => body(request),
      (origins) => service.admin.allowTestEgress(origins),
    )
    if (proxied) return json(proxied.status, proxied.body)
    const hooks = await webhookControl(service, method, path, request, () => body(request))
    if (hooks) return json(hooks.status, hooks.body)
    const logs = await logControl(service, method, path, new URL(request.url).searchParams)
    if (logs) return json(logs.status, logs.body)
    return problem(404, 'Not Found', `no control route ${method} ${path}`)
  }

  const consolePages = consoleHandler(service, {
    authorized: (request) => authorized(request, options.adminToken),
    ...(options.requests ? { requests: options.requests } : {}),
    ...(options.faults ? { faults: options.faults } : {}),
    clock: options.clock,
  })

  return async (request) => {
    const url = new URL(request.url)
    const path = url.pathname
    if (isConsolePath(path)) return consolePages(request)
    const started = performance.now()
    const witness = options.requests?.begin()
    const answer = await controlAnswer(request, path, route, (r) => authorized(r, options.adminToken))
    const moved = path === '/_test/clock' && request.method === 'POST' && answer.status === 200
    options.log?.(
      `control: ${request.method} ${path} ${answer.status}${moved ? ` clock now ${options.clock.now().toISOString()}` : ''}`,
    )
    // Reading the request log is not itself logged: a test polling it would only see itself.
    if (options.requests && !(request.method === 'GET' && path.startsWith('/_test/requests'))) {
      const problemBody = answer.headers.get('content-type')?.startsWith('application/problem+json')
        ? await answer.clone().text()
        : null
      const exchange = {
        request_id: `control_${nanoid(12)}`,
        kind: 'control' as const,
        method: request.method,
        path,
        search: url.search.slice(1),
        status: answer.status,
        ms: performance.now() - started,
        problemBody,
      }
      options.requests.finish(exchange, witness)
    }
    return answer
  }
}

/** A control-plane call's answer: 401 without the admin token, the route's answer, or its problem. */
async function controlAnswer(
  request: Request,
  path: string,
  route: (method: string, path: string, request: Request) => Promise<Response>,
  isAuthorized: (request: Request) => boolean,
): Promise<Response> {
  if (!isTestControlPath(path)) return problem(404, 'Not Found', 'not a control route')
  if (!isAuthorized(request)) {
    return problem(401, 'Unauthorized', 'the control plane needs Authorization: Bearer <admin token>')
  }
  try {
    return await route(request.method, path, request)
  } catch (error) {
    // The API's own table: a ServiceError by its code, a StoreError as 503 with Retry-After.
    const known = problemFor(error)
    if (known === null) console.error('tokenvault: the control plane failed', error)
    const out = known ?? internalError()
    return new Response(out.body, { status: out.status, headers: out.headers })
  }
}

type BodyReader = (request: Request) => Promise<unknown>

/** The clock, reset, snapshot, restore and fixture routes; null for any other path. */
async function stateRoute(
  service: TestService,
  options: TestControlOptions,
  method: string,
  path: string,
  request: Request,
  body: BodyReader,
): Promise<Response | null> {
  if (path === '/_test/clock' && method === 'GET')
    return json(200, { now: options.clock.now().toISOString() })
  if (path === '/_test/clock' && method === 'POST') {
    const move = clockMove(await body(request), options.clock.now().getTime())
    if ('advance_ms' in move) options.clock.advance(move.advance_ms)
    else options.clock.set(new Date(move.set))
    const swept = await service.admin.sweep()
    return json(200, { now: options.clock.now().toISOString(), swept })
  }
  if (path === '/_test/reset' && method === 'POST') {
    const journal = new URL(request.url).searchParams.get('journal')
    if (journal !== null && journal !== 'keep' && journal !== 'clear')
      throw new ServiceError('validation_failed', 'journal: keep or clear', {
        issues: { journal: ['keep or clear'] },
      })
    if (options.initial) await service.admin.importState(options.initial)
    else await service.admin.clearState()
    if (journal !== 'keep') {
      service.journal.clear()
      options.requests?.clear()
    }
    options.insight?.clear()
    options.faults?.clear()
    if (options.proxy) {
      options.proxy.reset()
      service.admin.allowTestEgress(options.proxy.origins)
    }
    return json(204, undefined)
  }
  if (path === '/_test/snapshot' && method === 'POST') return json(200, await service.admin.exportState())
  if (path === '/_test/restore' && method === 'POST') {
    await unchecked(service.admin).importState(await body(request))
    return json(204, undefined)
  }
  if (path === '/_test/fixture' && method === 'POST') {
    return json(201, { tenants: await unchecked(service.admin).loadFixture(await body(request)) })
  }
  return null
}

/** `GET /_test/journal`'s entries: filtered by `operation`, `since`, `tenant`, `limit`. */
function journalOf(service: TestService, request: Request) {
  const q = new URL(request.url).searchParams
  const filter: JournalQuery = {}
  for (const name of ['operation', 'since', 'tenant'] as const) {
    const value = q.get(name)
    if (value !== null) filter[name] = value
  }
  const limit = q.get('limit')
  if (limit !== null) {
    if (!/^\d{1,6}$/.test(limit))
      throw new ServiceError('validation_failed', 'limit: a whole number', {
        issues: { limit: ['a whole number'] },
      })
    filter.limit = Number(limit)
  }
  return service.journal.query(filter)
}

/** `GET /_test/requests`, `GET /_test/requests/{id}` and `POST /_test/mark`; null for other paths. */
async function requestsRoute(
  service: TestService,
  log: RequestLog,
  method: string,
  path: string,
  request: Request,
  body: BodyReader,
): Promise<Response | null> {
  if (path === '/_test/requests' && method === 'GET') {
    const query = requestQuery(new URL(request.url).searchParams)
    return json(200, { data: await requestViews(service, log.list(query)) })
  }
  const one = /^\/_test\/requests\/([^/]+)$/.exec(path)
  if (one && method === 'GET') {
    const id = decodedSegment(one[1]!)
    const entry = id === null ? undefined : log.get(id)
    if (!entry) return problem(404, 'Not Found', 'no such request in the log (it may have been evicted)')
    return json(200, (await requestViews(service, [entry]))[0])
  }
  if (path === '/_test/mark' && method === 'POST') {
    const name = markName(await body(request))
    log.mark(name)
    return json(201, { name })
  }
  return null
}

/** The body as text, refused with a 400 once it passes `maxBytes` (never read further). */
async function boundedText(request: Request, maxBytes: number): Promise<string> {
  const tooLarge = () =>
    new ServiceError('validation_failed', `the body is larger than ${maxBytes} bytes`, {
      issues: { body: ['too large'] },
    })
  const declared = Number(request.headers.get('content-length') ?? '0')
  if (declared > maxBytes) throw tooLarge()
  if (!request.body) return ''
  const chunks: Uint8Array[] = []
  let total = 0
  const reader = request.body.getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > maxBytes) {
      await reader.cancel()
      throw tooLarge()
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks, total).toString('utf8')
}

/**
 * A `POST /_test/clock` body checked: `{ advance_ms }` or `{ set }`, and `allow_backwards: true`
 * when it moves the clock back (a negative advance, or a time before `nowMs`): going back is
 * refused unless asked for, since records and journal rows would then be older than earlier ones.
 */
export function clockMove(input: unknown, nowMs: number): { advance_ms: number } | { set: string } {
  const b = (typeof input === 'object' && input !== null ? input : {}) as Record<string, unknown>
  const back = b['allow_backwards']
  const keys = Object.keys(b).filter((k) => k !== 'allow_backwards')
  const refuse = (field: string, message: string): never => {
    throw new ServiceError('validation_failed', message, { issues: { [field]: [message] } })
  }
  if (back !== undefined && typeof back !== 'boolean')
    refuse('allow_backwards', 'allow_backwards: true or false')
  const advance = b['advance_ms']
  const set = b['set']
  let move: { advance_ms: number } | { set: string } | undefined
  let deltaMs = 0
  if (keys.length === 1 && typeof advance === 'number' && Number.isFinite(advance)) {
    move = { advance_ms: advance }
    deltaMs = advance
  } else if (keys.length === 1 && typeof set === 'string' && !Number.isNaN(Date.parse(set))) {
    move = { set }
    deltaMs = Date.parse(set) - nowMs
  }
  if (move === undefined)
    return refuse(
      'body',
      'give either { "advance_ms": number } or { "set": ISO time } (and "allow_backwards": true to go back)',
    )
  if (deltaMs < 0 && back !== true)
    refuse(
      keys[0]!,
      `this moves the clock back by ${-deltaMs} ms: add "allow_backwards": true to mean it (records written since would look newer than what follows)`,
    )
  return move
}
