import { readFile } from 'node:fs/promises'
import { type Clock, ServiceError, STATUS_BY_CODE } from '../../src/kernel/index.js'
import type { StateSnapshot } from '../../src/lifecycle/index.js'
import type { JournalEntry, TestService } from '../../src/service/index.js'
import type { StoreErrorCode } from '../../src/store/index.js'
import { decodePart, whole } from './console-query.js'
import { recordsApi } from './console-records.js'
import type { FaultRegistry } from './faults.js'
import type { FetchHandler } from './handler.js'
import { internalError, problemFor, STORE_ANSWERS } from './problem.js'
import type { RequestLog, RequestLogEntry } from './request-log.js'
import { nameBook, requestViews } from './request-view.js'

/** Options of `consoleHandler`. */
export interface ConsoleOptions {
  /** Whether the request carries the admin token (`Authorization: Bearer <token>`). */
  authorized: (request: Request) => boolean
  /** The request log (test mode): served as `api/requests`, its stream and its export. */
  requests?: RequestLog
  /** The faults waiting, listed by `api/status`. */
  faults?: Pick<FaultRegistry, 'list'>
  /** The service clock (the test clock), shown beside the wall clock by `api/status`. */
  clock?: Clock
}

/** Whether `path` is the console's (`/_console/...`). */
export const isConsolePath = (path: string): boolean => path === '/_console' || path.startsWith('/_console/')

/** The console's files: served as they are, without the token (they hold no data). */
const ASSETS: Record<string, { file: string; type: string }> = {
  '/_console/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/_console/console.js': { file: 'console.js', type: 'text/javascript; charset=utf-8' },
  '/_console/console.css': { file: 'console.css', type: 'text/css; charset=utf-8' },
}
const ASSET_DIR = new URL('./console/', import.meta.url)

/**
 * Scripts and styles from the console's own files only (no inline script or style, no other
 * origin), calls to this origin only, no frames, no forms sent, and no string reaching an HTML
 * sink (Trusted Types): a value that slipped into markup could run nothing.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join('; ')

const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'cache-control': 'no-store',
}

/** How many snapshots the console keeps (the oldest goes first). */
export const SNAPSHOTS_KEPT = 20
/** How many journal entries one poll answers at most (the newest). */
const JOURNAL_PAGE = 500
/** What an exported request log file says it is (the page opens such a file offline). */
export const EXPORT_FORMAT = 'tokenvault-request-log/1'
/** How often a request stream sends a comment, so a dead connection is noticed (ms). */
const HEARTBEAT_MS = 15_000

const answer = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(body === undefined ? null : JSON.stringify(body), {
    status,
    headers: {
      ...SECURITY_HEADERS,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
  })
const problem = (status: number, title: string, detail: string, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ type: 'about:blank', title, status, detail }), {
    status,
    headers: { ...SECURITY_HEADERS, 'content-type': 'application/problem+json', ...headers },
  })

/** The HTTP status the API answers for a journal entry's outcome (`null` for a success: 200, 201 or 204). */
export function statusOfOutcome(outcome: JournalEntry['outcome']): number | null {
  if (outcome.ok) return null
  const code = outcome.code
  if (Object.hasOwn(STATUS_BY_CODE, code)) return STATUS_BY_CODE[code as keyof typeof STATUS_BY_CODE]
  if (code.startsWith('store_') && Object.hasOwn(STORE_ANSWERS, code.slice(6)))
    return STORE_ANSWERS[code.slice(6) as StoreErrorCode].status
  return 500
}

/** A journal entry as the console lists it: ids and outcomes only, as the journal holds them. */
function entryView(e: JournalEntry) {
  return {
    seq: e.seq,
    at: e.at,
    tenant_id: e.tenant_id,
    actor: e.actor,
    operation: e.operation,
    outcome: e.outcome.ok ? 'ok' : e.outcome.code,
    status: statusOfOutcome(e.outcome),
    ids: e.ids,
  }
}

interface HeldSnapshot {
  id: string
  label: string
  clock: string
  counts: Record<string, number>
  snapshot: StateSnapshot
}

/**
 * The test console under `/_console/`: the page (`/_console/`, its script and its style, served
 * without the token: they hold no data) and its read API under `/_console/api/`, behind the admin
 * token (401 without it):
 *
 * - `GET api/journal?after=<seq>` → `{ data, last }`: entries after `seq` (the newest 500), each
 *   with the status its outcome answers over HTTP; never token data (the journal holds none);
 * - `GET api/tenants`; `GET api/tenants/{id}/tokens?start=&size=` (keyset pages, tokens masked),
 *   `…/transactions`, `…/reactors?offset=`, `…/applications?offset=` (see `AdminView`);
 * - `GET api/snapshots`, `POST api/snapshots` `{ label? }` (takes one and keeps it here: its token
 *   data never goes to the browser), `POST api/snapshots/{id}/restore`;
 * - a tenant's audit log and deliveries: `api/tenants/{id}/logs…`, `…/deliveries…` (see `recordsApi`).
 *
 * The clock and reset are the control plane's own routes (`/_test/clock`, `/_test/reset`).
 */
export function consoleHandler(service: TestService, options: ConsoleOptions): FetchHandler {
  const assets = new Map<string, string>()
  const held = { snapshots: [] as HeldSnapshot[], taken: 0 }

  const asset = async (path: string): Promise<Response> => {
    const entry = ASSETS[path]!
    let text = assets.get(entry.file)
    if (text === undefined) {
      text = await readFile(new URL(entry.file, ASSET_DIR), 'utf8')
      assets.set(entry.file, text)
    }
    return new Response(text, { status: 200, headers: { ...SECURITY_HEADERS, 'content-type': entry.type } })
  }

  const api = async (method: string, path: string, q: URLSearchParams, request: Request) => {
    if (method === 'GET' && path === 'journal') return answer(200, await journalPage(service, q))
    if (method === 'GET' && path === 'tenants')
      return answer(200, { data: await service.admin.view.tenants() })
    if (method === 'GET' && path === 'status') return answer(200, statusOf(options))
    const requests = options.requests && (await requestsApi(service, options.requests, method, path, q))
    if (requests) return requests
    const snapshot = await snapshotApi(service, held, method, path, request)
    if (snapshot) return snapshot
    const records = await recordsApi(service, method, path, q)
    if (records) return answer(records.status, records.body)
    const tenantRoute = /^tenants\/([^/]+)\/(tokens|transactions|reactors|applications)$/.exec(path)
    if (tenantRoute && method === 'GET') return answer(200, await tenantPart(service, tenantRoute, q))
    return problem(404, 'Not Found', `no console route ${method} /_console/api/${path}`)
  }

  return async (request) => {
    const url = new URL(request.url)
    const path = url.pathname
    if (!isConsolePath(path)) return problem(404, 'Not Found', 'not a console route')
    if (path === '/_console') return new Response(null, { status: 308, headers: { location: '/_console/' } })
    if (Object.hasOwn(ASSETS, path)) {
      if (request.method !== 'GET' && request.method !== 'HEAD')
        return problem(405, 'Method Not Allowed', 'the console page is read with GET', { allow: 'GET, HEAD' })
      return asset(path)
    }
    if (!path.startsWith('/_console/api/')) return problem(404, 'Not Found', `no console route ${path}`)
    if (!options.authorized(request)) {
      return problem(401, 'Unauthorized', 'the console needs Authorization: Bearer <admin token>', {
        'www-authenticate': 'Bearer',
      })
    }
    try {
      return await api(request.method, path.slice('/_console/api/'.length), url.searchParams, request)
    } catch (error) {
      const known = problemFor(error)
      if (known === null) console.error('tokenvault: the console failed', error)
      const out = known ?? internalError()
      return new Response(out.body, { status: out.status, headers: { ...SECURITY_HEADERS, ...out.headers } })
    }
  }
}

/** `GET api/journal?after=`: the newest entries after `after`, names beside ids. */
async function journalPage(service: TestService, q: URLSearchParams) {
  const after = whole(q, 'after') ?? 0
  const entries = service.journal.query().filter((e) => e.seq > after)
  const last = entries.length ? entries[entries.length - 1]!.seq : after
  const shown = entries.slice(-JOURNAL_PAGE)
  const name = await nameBook(
    service,
    shown.flatMap((e) => (e.tenant_id === null ? [] : [e.tenant_id])),
  )
  return {
    data: shown.map((e) => ({
      ...entryView(e),
      tenant_name: name(e.tenant_id),
      actor_name: name('id' in e.actor ? e.actor.id : null),
    })),
    last,
  }
}

/** `GET api/status`: the test clock and the wall clock side by side, and the faults waiting. */
function statusOf(options: ConsoleOptions) {
  return {
    clock: options.clock?.now().toISOString() ?? null,
    wall: new Date().toISOString(),
    faults: options.faults?.list() ?? [],
    requests_kept: options.requests?.size ?? null,
  }
}

/** The snapshots' routes (`api/snapshots`, `api/snapshots/{id}/restore`); null for other paths. */
async function snapshotApi(
  service: TestService,
  held: { snapshots: HeldSnapshot[]; taken: number },
  method: string,
  path: string,
  request: Request,
): Promise<Response | null> {
  const { snapshots } = held
  if (path === 'snapshots' && method === 'GET') return answer(200, { data: snapshots.map(snapshotView) })
  if (path === 'snapshots' && method === 'POST') {
    const label = await labelOf(request)
    const snapshot = await service.admin.exportState()
    const counts = Object.fromEntries(
      Object.entries(snapshot.records).map(([kind, list]) => [kind, (list as unknown[]).length]),
    )
    const one: HeldSnapshot = { id: `snap_${++held.taken}`, label, clock: snapshot.clock, counts, snapshot }
    snapshots.push(one)
    if (snapshots.length > SNAPSHOTS_KEPT) snapshots.shift()
    return answer(201, snapshotView(one))
  }
  const restore = /^snapshots\/([^/]+)\/restore$/.exec(path)
  if (restore && method === 'POST') {
    const found = snapshots.find((s) => s.id === restore[1])
    if (!found) return problem(404, 'Not Found', 'no such snapshot')
    await service.admin.importState(found.snapshot)
    return answer(204, undefined)
  }
  return null
}

const snapshotView = ({ snapshot: _snapshot, ...rest }: HeldSnapshot) => rest

/** One part of a tenant's view: its tokens (keyset pages), transactions, reactors or applications. */
async function tenantPart(service: TestService, route: RegExpExecArray, q: URLSearchParams) {
  const view = service.admin.view
  const tenant = decodePart(route[1]!)
  switch (route[2]) {
    case 'tokens': {
      const start = q.get('start')
      const size = whole(q, 'size')
      return view.tokens(tenant, {
        ...(start === null ? {} : { start }),
        ...(size === undefined ? {} : { size }),
      })
    }
    case 'transactions':
      return view.transactions(tenant)
    case 'reactors':
      return view.reactors(tenant, pageOf(q))
    default:
      return view.applications(tenant, pageOf(q))
  }
}

/**
 * The request log's routes: `api/requests?after=&limit=` → `{ data, last }`, `api/requests/{id}`,
 * `api/requests/export` (the redacted log as a file), `api/requests/stream` (server-sent events:
 * each new entry as an `request` event); null for other paths.
 */
async function requestsApi(
  service: TestService,
  log: RequestLog,
  method: string,
  path: string,
  q: URLSearchParams,
): Promise<Response | null> {
  if (method !== 'GET' || (path !== 'requests' && !path.startsWith('requests/'))) return null
  if (path === 'requests/stream') return requestStream(service, log, whole(q, 'after') ?? 0)
  if (path === 'requests/export') {
    const data = await requestViews(service, log.list())
    const file = { format: EXPORT_FORMAT, exported_at: new Date().toISOString(), data }
    const name = `tokenvault-requests-${file.exported_at.replace(/[:.]/g, '-')}.json`
    return answer(200, file, { 'content-disposition': `attachment; filename="${name}"` })
  }
  if (path === 'requests') {
    const after = whole(q, 'after') ?? 0
    const entries = log.list({ after, limit: whole(q, 'limit') ?? JOURNAL_PAGE })
    const last = entries.length ? entries[entries.length - 1]!.seq : after
    return answer(200, { data: await requestViews(service, entries), last })
  }
  const entry = log.get(decodePart(path.slice('requests/'.length)))
  if (!entry) return problem(404, 'Not Found', 'no such request in the log (it may have been evicted)')
  return answer(200, (await requestViews(service, [entry]))[0])
}

/** Server-sent events of the request log: the entries after `after`, then each new one as it comes. */
function requestStream(service: TestService, log: RequestLog, after: number): Response {
  const encoder = new TextEncoder()
  let stop = () => {}
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      let chain = Promise.resolve()
      const send = (entries: RequestLogEntry[]) => {
        chain = chain
          .then(() => requestViews(service, entries))
          .then((views) => {
            for (const view of views)
              controller.enqueue(
                encoder.encode(`event: request\nid: ${view.seq}\ndata: ${JSON.stringify(view)}\n\n`),
              )
          })
          .catch(() => {})
      }
      // Two chunks at once: a host writes the head as soon as it has more than one.
      controller.enqueue(encoder.encode(': tokenvault request log\n\n'))
      controller.enqueue(encoder.encode('retry: 1000\n\n'))
      const off = log.on((entry) => send([entry]))
      send(log.list({ after }))
      const beat = setInterval(() => controller.enqueue(encoder.encode(': beat\n\n')), HEARTBEAT_MS)
      beat.unref?.()
      stop = () => {
        off()
        clearInterval(beat)
      }
    },
    cancel: () => stop(),
  })
  return new Response(body, {
    status: 200,
    headers: { ...SECURITY_HEADERS, 'content-type': 'text/event-stream; charset=utf-8' },
  })
}

function pageOf(q: URLSearchParams): { offset?: number; limit?: number } {
  const offset = whole(q, 'offset')
  const limit = whole(q, 'limit')
  return { ...(offset === undefined ? {} : { offset }), ...(limit === undefined ? {} : { limit }) }
}

/** The snapshot's label from a small JSON body `{ "label": "..." }` (at most 200 characters). */
async function labelOf(request: Request): Promise<string> {
  const bad = () =>
    new ServiceError('validation_failed', 'give { "label": a string of at most 200 characters }', {
      issues: { label: ['a string of at most 200 characters'] },
    })
  const chunks: Uint8Array[] = []
  let total = 0
  const reader = request.body?.getReader()
  for (;;) {
    const read = reader ? await reader.read() : { done: true as const, value: undefined }
    if (read.done) break
    total += read.value.byteLength
    if (total > 4096) {
      await reader!.cancel()
      throw bad()
    }
    chunks.push(read.value)
  }
  const text = Buffer.concat(chunks, total).toString('utf8')
  if (text.trim() === '') return ''
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    throw bad()
  }
  const label = (body as { label?: unknown } | null)?.label ?? ''
  if (typeof label !== 'string' || label.length > 200) throw bad()
  return label
}
