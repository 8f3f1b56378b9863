import { nanoid } from 'nanoid'
import { ServiceError, sha256 } from '../../src/kernel/index.js'
import { type Client, type IdempotencyOutcome, type Service, unchecked } from '../../src/service/index.js'
import { StoreError } from '../../src/store/index.js'
import { type AdmissionBounds, admissionBounds, admitter } from './admission.js'
import { answerParts } from './answer-text.js'
import { declaredBodyBytes, readJsonBody, requireMediaType } from './body.js'
import { type BinaryResult, binaryAnswer, declaredUploadBytes, readUpload } from './document-routes.js'
import { type Incoming, type Outgoing, TOO_LARGE, UNREADABLE } from './exchange.js'
import { bridgedIncoming, isBridged, standInResponse } from './light.js'
import { notBuilt } from './not-built.js'
import { openApiDocument } from './openapi.js'
import { PACED_ANSWER_CHARS, type PacedOutgoing, pacedParts } from './paced-answer.js'
import { HttpProblem, internalError, problemFor } from './problem.js'
import { isProxyPath, proxyRoute } from './proxy-routes.js'
import { parseQuery, type Query } from './query.js'
import type { ExchangeWitness, RequestLog } from './request-log.js'
import type { Match } from './router.js'
import { ACCEPTED, apiRouter, type Route } from './routes.js'

/** A WHATWG fetch handler, as Hono, Next.js route handlers, Deno and Bun take it. */
export type FetchHandler = (request: Request) => Promise<Response>

/** What the handler reports: one `request` event per request, and each unexpected failure (`error`). */
export type HttpLogEvent =
  | {
      kind: 'request'
      method: string
      /** The request path, without the query string. */
      path: string
      status: number
      /** Time from the request to the answer being ready, in milliseconds. */
      ms: number
      /** The request's id: its `X-Request-Id` when it sent a plain one, else a random UUID; answered as `X-Request-Id`. */
      requestId: string
    }
  | {
      kind: 'error'
      method: string
      path: string
      error: unknown
      requestId: string
      /** A failure the service expects and answers itself (a store unavailable: 503): worth one line, not a stack. */
      expected?: boolean
    }

/**
 * Options of `createHttpHandler`. The admission bounds (`maxInFlightPerTenant` and the rest, see
 * `AdmissionBounds`) keep one tenant's requests from holding back another's: each request waits
 * for its tenant's turn before its body is read.
 */
export interface HttpHandlerOptions extends Partial<AdmissionBounds> {
  /**
   * Prefix of the API key, transaction and idempotency headers: `<prefix>-API-KEY`,
   * `<prefix>-TRANSACTION-ID`, `<prefix>-IDEMPOTENCY-KEY` (case-insensitive). Without it both
   * `SVC-` and `BT-` headers are accepted (the Basis Theory SDKs send `BT-`); when a request carries
   * both, the `SVC-` one is used. Give `SVC` or `BT` to accept that prefix alone.
   * @default both `SVC` and `BT`
   */
  headerPrefix?: string
  /** Largest accepted request body in bytes (default 1 MiB); a larger one answers 413 unread. */
  maxBodyBytes?: number
  /** Receives request and error events. Without it, unexpected errors go to `console.error`. */
  log?: (event: HttpLogEvent) => void
  /**
   * Serves every route under this path prefix (e.g. `/vault`: `GET /vault/tokens/{id}`), for
   * frameworks that mount the handler without stripping the prefix. Paths outside it answer 404.
   * @default ''
   */
  basePath?: string
  /**
   * Lets browser apps on these origins call the API (sessions are for public, browser apps):
   * preflight `OPTIONS` answers 204 with the allowed methods and headers (the API key, transaction
   * and idempotency headers, `content-type`), and answers to an allowed origin carry
   * `Access-Control-Allow-Origin`. `'*'` allows any origin. Off by default.
   */
  cors?: { origins: readonly string[] }
  /**
   * Test mode's request log: every exchange is recorded there (method, path, status, duration,
   * problem, journal entries, access traces; never data). Absent: nothing is recorded or computed.
   */
  requestLog?: RequestLog
  /** Describes the `/_test/` control plane in `/openapi.json` (the server's test mode serves it). @default false */
  documentTestControl?: boolean
  /**
   * A monotonic time in ms, read by admission to tell whether other tenants were active lately
   * (`maxInFlightPerTenantContended`); tests give their own. @default performance.now
   */
  now?: () => number
}

/** The handler over the transport-neutral exchange: what `toNodeListener` calls directly. */
export type ExchangeHandler = (incoming: Incoming) => Promise<Outgoing>

const exchangeHandlers = new WeakMap<object, ExchangeHandler>()

/** The exchange handler behind a handler made by `createHttpHandler`, if it is one. */
export function exchangeHandlerOf(handler: (request: Request) => unknown): ExchangeHandler | undefined {
  return exchangeHandlers.get(handler)
}

/**
 * The bytes of each `Response` a handler made, so that a host of this package writing one back
 * (`toNodeListener`) takes them as they are instead of reading the body's stream back (a
 * `getReader` and two reads: about as dear as making the `Response`). Only while the body is
 * untouched: once anything read or locked its stream, the stream is what holds the truth.
 */
const responseBodies = new WeakMap<Response, Uint8Array>()

/** The bytes of `response` when a handler made it and nothing has read its body; else `undefined`. */
export function untouchedBody(response: Response): Uint8Array | undefined {
  const bytes = responseBodies.get(response)
  if (bytes === undefined || response.bodyUsed || response.body?.locked !== false) return undefined
  return bytes
}

/**
 * Body readers a host of this package gives the `Request`s it makes (`toNodeListener`): a handler
 * reaching one whose body stream nothing has touched reads the body from its source at once
 * instead of through the stream.
 */
const requestBodies = new WeakMap<Request, Incoming['readBody']>()

/** Lets a handler read `request`'s body with `read` while its stream is untouched (see `requestBodies`). */
export function giveBodyReader(request: Request, read: Incoming['readBody']): void {
  requestBodies.set(request, read)
}

/** What one request carries to its key's kept client (`Client.withCall`). */
type CallOptions = Parameters<Client['withCall']>[0]

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH'])
/** How many recent keys' clients a handler keeps (oldest out first). */
const CLIENTS_KEPT = 1024
/** Longer keys are never valid (`hashApiKey`): their clients are not kept. */
const MAX_KEY_LENGTH = 200
const EMPTY_QUERY: Query = Object.freeze(Object.create(null))
/** How many mount prefixes' OpenAPI documents a handler keeps. */
const MOUNTS_KEPT = 8
/** A request id taken as sent: short, and nothing a log line could be forged with. */
const PLAIN_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** Splits a request target (origin-form or absolute URL) into its path and its query string. */
function splitTarget(target: string): { path: string; search: string } {
  let start = 0
  if (target.charCodeAt(0) !== 47) {
    const scheme = target.indexOf('://')
    start = scheme === -1 ? target.length : target.indexOf('/', scheme + 3)
    if (start === -1) start = target.length
  }
  const hash = target.indexOf('#', start)
  const stop = hash === -1 ? target.length : hash
  const mark = target.indexOf('?', start)
  const query = mark !== -1 && mark < stop
  const path = target.slice(start, query ? mark : stop)
  const search = query ? target.slice(mark + 1, stop) : ''
  return { path: path === '' ? '/' : path, search }
}

/** The problem for a request that matched no route. */
function unmatched(
  match: Exclude<Match<Route>, { kind: 'found' }>,
  method: string,
  path: string,
): HttpProblem {
  if (match.kind !== 'bad-encoding') {
    const reference = notBuilt(method, path)
    if (reference) return reference
  }
  switch (match.kind) {
    case 'none':
      return new HttpProblem(404, `No route matches ${method} ${path}.`)
    case 'method':
      return new HttpProblem(405, `${method} is not allowed here; allowed: ${match.allow}.`, {
        allow: match.allow,
      })
    case 'bad-encoding':
      return new HttpProblem(400, 'The path is not valid percent-encoding.', {}, { path: ['is malformed'] })
  }
}

/** What every request of one handler shares: its options, headers, router, clients and admission. */
interface Setup {
  service: Service
  options: HttpHandlerOptions
  prefixes: readonly string[]
  keyHeader: readonly string[]
  transactionHeader: readonly string[]
  idempotencyHeader: readonly string[]
  /** A 401 names how to authenticate (RFC 9110 requires a challenge): the API key header. */
  challenge: string
  keyHint: string
  maxBodyBytes: number
  router: ReturnType<typeof apiRouter>
  basePath: string
  cors: ReturnType<typeof corsPolicy> | null
  admission: ReturnType<typeof admitter>
  clientFor: (apiKey: string, id: string | null) => Client
  /**
   * The OpenAPI document's JSON bytes by mount prefix, built on the first request for it and answered
   * as they are: every answer of it writes the same bytes (150 KB), none a copy of its own that an
   * unread connection would hold.
   */
  openApi: Map<string, Uint8Array>
}

/** The first of `names` the request carries, or null. */
function first(incoming: Incoming, names: readonly string[]): string | null {
  for (const name of names) {
    const value = incoming.header(name)
    if (value !== null) return value
  }
  return null
}

/** The shared parts of a handler of `service` under `options`. */
function setupOf(service: Service, options: HttpHandlerOptions): Setup {
  const prefixes = headerPrefixes(options.headerPrefix)
  const keyHeaders = prefixes.map((p) => `${p}-API-KEY`)
  /**
   * Clients of recent keys, by the keys' hashes; each request takes a view of its key's
   * (`withCall`: its request id, transaction, idempotency key, recorder). A client holds no answer
   * and no authority: it checks its key on every call (a deleted key or an expired session fails at
   * once), so reusing one only saves hashing the key and building the client.
   */
  const clients = new Map<string, Client>()
  const clientFor = (apiKey: string, id: string | null): Client => {
    if (id === null) return service.connect(apiKey)
    let client = clients.get(id)
    if (client === undefined) {
      client = service.connect(apiKey)
      if (clients.size >= CLIENTS_KEPT) clients.delete(clients.keys().next().value!)
      clients.set(id, client)
    }
    return client
  }
  return {
    service,
    options,
    prefixes,
    keyHeader: headerNames(prefixes, 'api-key'),
    transactionHeader: headerNames(prefixes, 'transaction-id'),
    idempotencyHeader: headerNames(prefixes, 'idempotency-key'),
    challenge: keyHeaders.map((name) => `ApiKey header="${name}"`).join(', '),
    keyHint: `Send the API key in the ${keyHeaders.join(' or ')} header.`,
    maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    router: apiRouter(),
    basePath: normalizeBase(options.basePath ?? ''),
    cors: options.cors ? corsPolicy(options.cors.origins, prefixes) : null,
    admission: admitter(service, admissionBounds(options), options.now),
    clientFor,
    openApi: new Map(),
  }
}

/** The proxy route of a handler: under the tenant's admission turn like every API call. */
function proxyOf(s: Setup) {
  const { service } = s
  return proxyRoute({
    service,
    prefixes: s.prefixes,
    maxBodyBytes: s.maxBodyBytes,
    first,
    admitted: async (apiKey, bytes, run) => {
      const keyHash = apiKey.length === 0 || apiKey.length > MAX_KEY_LENGTH ? null : sha256(apiKey)
      return inLane(s, s.admission.admit(apiKey, keyHash, bytes), bytes, run)
    },
    admittedUnder: (tenantId, bytes, run) => inLane(s, s.admission.admitUnder(tenantId, bytes), bytes, run),
    // The kept client of the key, viewed with the request's id, as every other route's call.
    clientFor: (apiKey, idempotencyKey, requestId, signal) => {
      const keyHash = apiKey.length === 0 || apiKey.length > MAX_KEY_LENGTH ? null : sha256(apiKey)
      const options: CallOptions = { requestId }
      if (idempotencyKey !== null) options.idempotencyKey = idempotencyKey
      if (signal !== undefined) options.signal = signal
      return s.clientFor(apiKey, keyHash).withCall(options)
    },
  })
}

/** Runs `run` once `admitted` (a lane, or the promise of one) lets it in, and leaves the lane after. */
async function inLane<T>(
  s: Setup,
  admitted: string | Promise<string>,
  bytes: number,
  run: () => Promise<T>,
): Promise<T> {
  const lane = typeof admitted === 'string' ? admitted : await admitted
  try {
    return await run()
  } finally {
    s.admission.leave(lane, bytes)
  }
}

/** Routes one request, waits for its tenant's turn, and performs it. */
async function dispatch(
  s: Setup,
  incoming: Incoming,
  method: string,
  path: string,
  search: string,
  witness: ExchangeWitness | undefined,
  requestId?: string,
): Promise<Outgoing> {
  const match = s.router.match(method, path)
  if (match.kind !== 'found') throw unmatched(match, method, path)
  const { route, params } = match
  if (route.mediaType !== undefined) requireMediaType(incoming.header('content-type'), route.mediaType)
  const withBody = BODY_METHODS.has(method)
  // Everything the headers decide comes first; then the tenant's turn; only then the body.
  const bytes = !withBody
    ? 0
    : route.upload
      ? declaredUploadBytes(incoming)
      : declaredBodyBytes(incoming, s.maxBodyBytes)
  const apiKey = first(incoming, s.keyHeader) ?? ''
  const keyHash = apiKey.length === 0 || apiKey.length > MAX_KEY_LENGTH ? null : sha256(apiKey)
  const admitted = s.admission.admit(apiKey, keyHash, bytes)
  const lane = typeof admitted === 'string' ? admitted : await admitted
  let out: Outgoing | PacedOutgoing
  try {
    const call: Call = { route, params, search, withBody, apiKey, keyHash, witness, requestId }
    out = await perform(s, incoming, call)
  } catch (error) {
    s.admission.leave(lane, bytes)
    throw error
  }
  if (!('parts' in out)) {
    s.admission.leave(lane, bytes)
    return out
  }
  // A large answer keeps its place in its tenant's lane until its last piece is taken.
  s.admission.settle(bytes)
  return pacedParts(out, () => s.admission.leave(lane, bytes, true))
}

/** One routed call: its route and path parameters, query, key, and the request log's witness. */
interface Call {
  route: Route
  params: string[]
  search: string
  withBody: boolean
  apiKey: string
  keyHash: string | null
  witness: ExchangeWitness | undefined
  /** The request's id (`X-Request-Id`): the audit log's `request_id` of the call's entries. */
  requestId: string | undefined
}

/**
 * The client a call runs with: the kept client of its key, viewed with what this request alone
 * carries (request id, transaction, idempotency key, the request log's recorder).
 */
function clientOfCall(
  s: Setup,
  incoming: Incoming,
  call: Call,
  idempotencyKey: string | null,
  outcome: IdempotencyOutcome,
): Client {
  const transactionId = first(incoming, s.transactionHeader)
  const options: CallOptions = {}
  if (call.requestId !== undefined) options.requestId = call.requestId
  if (transactionId !== null) options.transactionId = transactionId
  if (idempotencyKey !== null) {
    options.idempotencyKey = idempotencyKey
    options.idempotencyOutcome = outcome
  }
  // Test mode's request log: the call's journal entries and access decisions come back to it.
  if (call.witness !== undefined) options.recorder = call.witness.recorder
  return s.clientFor(call.apiKey, call.keyHash).withCall(options)
}

/**
 * Reads the body, calls the client of the request's key, and serializes its answer: a text answer
 * over `PACED_ANSWER_CHARS` is left in parts (a page's members and items), to be handed on paced.
 */
async function perform(s: Setup, incoming: Incoming, call: Call): Promise<Outgoing | PacedOutgoing> {
  const { route, withBody } = call
  const body = !withBody
    ? undefined
    : route.upload
      ? await readUpload(incoming)
      : await readJsonBody(incoming, s.maxBodyBytes)
  const query = route.query ? parseQuery(call.search) : EMPTY_QUERY
  // Idempotency applies to POST, PUT and PATCH; on GET and DELETE the header is ignored, and on an
  // upload too (its bytes are no JSON request to fingerprint).
  const idempotencyKey = withBody && !route.upload ? first(incoming, s.idempotencyHeader) : null
  const outcome: IdempotencyOutcome = {}
  const client = clientOfCall(s, incoming, call, idempotencyKey, outcome)
  const result = await route.run(unchecked(client), call.params, query, body)
  if (route.binary) return binaryAnswer(result as BinaryResult)
  if (result === ACCEPTED) return { status: 202, headers: { 'cache-control': 'no-store' }, body: null }
  if (route.status === 204 || result === undefined) {
    return { status: route.status, headers: { 'cache-control': 'no-store' }, body: null }
  }
  const { parts, chars, bytes } = await answerParts(result)
  const text = () => (parts.length === 1 ? parts[0]! : parts.join(''))
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'cache-control': 'no-store',
  }
  // An answer not kept for replay says so: a repeat of the request will be refused.
  if (outcome.replayable === false) headers['idempotency-replayable'] = 'false'
  if (chars <= PACED_ANSWER_CHARS) return { status: route.status, headers, body: text() }
  // A paced answer's length, counted part by part as it was serialized.
  headers['content-length'] = String(bytes)
  return { status: route.status, headers, parts }
}

/** The answer to a request that threw: its problem, or a logged 500 for an unknown failure. */
function failure(s: Setup, error: unknown, method: string, path: string, requestId: string): Outgoing {
  const log = s.options.log
  const known = problemFor(error)
  if (known) {
    if (known.status === 401) {
      // The key's own 401 says where the key goes; a formula's 401 is answered as it threw it.
      const hint = error instanceof ServiceError && error.code === 'unauthenticated' ? s.keyHint : null
      return unauthorized(known, s.challenge, hint)
    }
    if (error instanceof StoreError) {
      if (log) log({ kind: 'error', method, path, error, requestId, expected: true })
      else console.error(`tokenvault: ${method} ${path}: store ${error.code}: ${error.message}`)
    }
    return known
  }
  if (log) log({ kind: 'error', method, path, error, requestId })
  else console.error(`tokenvault: ${method} ${path} failed`, error)
  return internalError()
}

/** The OpenAPI document of the handler mounted under `mount`, as JSON bytes (kept per mount). */
function openApiBytes(s: Setup, mount: string): Uint8Array {
  let doc = s.openApi.get(mount)
  if (doc === undefined) {
    const text = JSON.stringify(
      openApiDocument({
        basePath: `${mount}${s.basePath}`,
        headerPrefixes: s.prefixes,
        ...(s.options.documentTestControl ? { testControl: true } : {}),
      }),
    )
    doc = new TextEncoder().encode(text)
    if (s.openApi.size < MOUNTS_KEPT) s.openApi.set(mount, doc)
  }
  return doc
}

/** Health, HEAD, OPTIONS and CORS around `dispatch`; null when the route table should answer. */
async function serveMeta(
  s: Setup,
  incoming: Incoming,
  method: string,
  path: string,
  search: string,
  witness: ExchangeWitness | undefined,
  requestId: string,
): Promise<Outgoing | null> {
  if (method === 'GET' || method === 'HEAD') {
    if (path === '/healthz') return json(200, { status: 'ok' })
    if (path === '/openapi.json') {
      const body = openApiBytes(s, incoming.mount?.() ?? '')
      return { status: 200, headers: { 'content-type': 'application/json' }, body }
    }
    if (path === '/readyz') {
      if (await s.service.ready()) return json(200, { status: 'ready' })
      const out = json(503, { status: 'unavailable' })
      return { ...out, headers: { ...out.headers, 'retry-after': '1' } }
    }
  }
  if (method === 'OPTIONS') {
    const match = s.router.match('OPTIONS', path)
    if (match.kind === 'none') throw unmatched(match, method, path)
    const allow = match.kind === 'method' ? withHead(match.allow) : 'OPTIONS'
    const origin = incoming.header('origin')
    const preflight = s.cors && origin !== null && incoming.header('access-control-request-method') !== null
    const headers: Record<string, string> = { allow: `${allow}, OPTIONS`, 'cache-control': 'no-store' }
    if (preflight && s.cors!.allows(origin)) Object.assign(headers, s.cors!.preflight(origin, allow))
    return { status: 204, headers, body: null }
  }
  if (method === 'HEAD') {
    const out = await dispatch(s, incoming, 'GET', path, search, witness, requestId)
    // A streamed answer left unread is cancelled: that ends its admission (see `pacedText`).
    if (out.body instanceof ReadableStream) await out.body.cancel()
    return { ...out, body: null }
  }
  return null
}

/** Whether `serveMeta` answers: health, the OpenAPI document, HEAD and OPTIONS. */
const isMeta = (method: string, path: string) =>
  method === 'OPTIONS' ||
  method === 'HEAD' ||
  (method === 'GET' && (path === '/healthz' || path === '/openapi.json' || path === '/readyz'))

/**
 * A request's id: its `X-Request-Id` when plain, else its `BT-TRACE-ID` (the Basis Theory SDKs'
 * correlation id) when plain, else a new one. (A malformed `X-Request-Id` once hid a plain trace id.)
 */
function requestIdOf(incoming: Incoming): string {
  const plain = (value: string | null) => (value !== null && PLAIN_REQUEST_ID.test(value) ? value : null)
  return plain(incoming.header('x-request-id')) ?? plain(incoming.header('bt-trace-id')) ?? nanoid()
}

/** Whether an answer is a problem document (its body then goes to the request log). */
const isProblem = (out: Outgoing) =>
  out.headers['content-type']?.startsWith('application/problem+json') === true

/**
 * The core of the adapter: routes the exchange, reads the body, calls the client of the request's
 * key, and serializes the answer or the problem. It holds no domain rule. With `requestLog` (test
 * mode), each exchange is recorded there with the journal entries and access traces it made.
 */
function exchangeHandler(service: Service, options: HttpHandlerOptions): ExchangeHandler {
  const s = setupOf(service, options)
  const { log, requestLog } = options
  const proxy = proxyOf(s)
  /** One request, start to answer: a single async step, so a plain call costs few promise turns. */
  const respond = async (incoming: Incoming): Promise<Outgoing> => {
    const started = log || requestLog ? performance.now() : 0
    const requestId = requestIdOf(incoming)
    const method = incoming.method
    const target = splitTarget(incoming.target)
    const witness = requestLog?.begin()
    let path = target.path
    let out: Outgoing
    try {
      const inside = s.basePath === '' || path === s.basePath || path.startsWith(`${s.basePath}/`)
      if (!inside) throw new HttpProblem(404, `No route matches ${method} ${path}.`)
      if (s.basePath !== '') path = path.slice(s.basePath.length) || '/'
      out = isProxyPath(path)
        ? await proxy(incoming, method, path, target.search, requestId)
        : isMeta(method, path)
          ? ((await serveMeta(s, incoming, method, path, target.search, witness, requestId)) ??
            (await dispatch(s, incoming, method, path, target.search, witness, requestId)))
          : await dispatch(s, incoming, method, path, target.search, witness, requestId)
    } catch (error) {
      out = failure(s, error, method, path, requestId)
    }
    out.headers['x-request-id'] = requestId
    if (s.cors) {
      const origin = incoming.header('origin')
      if (origin !== null && s.cors.allows(origin)) Object.assign(out.headers, s.cors.simple(origin))
    }
    const ms = log || requestLog ? performance.now() - started : 0
    if (log) log({ kind: 'request', method, path, status: out.status, ms, requestId })
    if (requestLog) {
      const problemBody = isProblem(out) && !(out.body instanceof ReadableStream) ? out.body : null
      // One literal: a spread and more fields after it (`{ ...a, b }`) costs V8 on Node 20 about 1.5 µs a field.
      const { status } = out
      requestLog.finish(
        { request_id: requestId, kind: 'api', method, path, search: target.search, status, ms, problemBody },
        witness,
      )
    }
    return out
  }
  return respond
}

/** The largest request body a handler reads without `maxBodyBytes`: 1 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024

/** The header prefixes a handler accepts, upper-case: the one given, or `SVC` and `BT`. */
export function headerPrefixes(given: string | undefined): readonly string[] {
  return given === undefined || given === '' ? ['SVC', 'BT'] : [given.toUpperCase()]
}

export const headerNames = (prefixes: readonly string[], suffix: string) =>
  prefixes.map((p) => `${p}-${suffix}`.toLowerCase())

/** A 401 with its challenge, its detail ending with which header carries the key. */
function unauthorized(known: Outgoing, challenge: string, hint: string | null): Outgoing {
  if (hint === null) return { ...known, headers: { ...known.headers, 'www-authenticate': challenge } }
  const body = JSON.parse(typeof known.body === 'string' ? known.body : '{}') as { detail?: string }
  body.detail = body.detail ? `${body.detail.replace(/\.?$/, '.')} ${hint}` : hint
  return {
    ...known,
    headers: { ...known.headers, 'www-authenticate': challenge },
    body: JSON.stringify(body),
  }
}

/** A JSON answer that carries no secret (health and readiness). */
function json(status: number, body: unknown): Outgoing {
  return {
    status,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store' },
    body: JSON.stringify(body),
  }
}

/** `allow` with HEAD wherever GET is allowed. */
function withHead(allow: string): string {
  return allow.split(', ').includes('GET') ? `${allow}, HEAD` : allow
}

/** `basePath` without a trailing slash, with a leading one (`''` when none). */
function normalizeBase(basePath: string): string {
  const trimmed = basePath.replace(/\/+$/, '')
  if (trimmed === '') return ''
  return trimmed.startsWith('/') ? trimmed : `/${trimmed}`
}

/** The CORS answers for a set of allowed origins (`*` for any). */
function corsPolicy(origins: readonly string[], prefixes: readonly string[]) {
  const any = origins.includes('*')
  const allowed = new Set(origins.map((o) => o.replace(/\/+$/, '').toLowerCase()))
  const headers = [
    ...prefixes.flatMap((p) => [`${p}-API-KEY`, `${p}-TRANSACTION-ID`, `${p}-IDEMPOTENCY-KEY`]),
    'Content-Type',
  ].join(', ')
  const allowOrigin = (origin: string) => (any ? '*' : origin)
  return {
    allows: (origin: string) => any || allowed.has(origin.toLowerCase()),
    preflight: (origin: string, methods: string): Record<string, string> => ({
      'access-control-allow-origin': allowOrigin(origin),
      'access-control-allow-methods': methods,
      'access-control-allow-headers': headers,
      'access-control-max-age': '600',
      vary: 'Origin',
    }),
    simple: (origin: string): Record<string, string> => ({
      'access-control-allow-origin': allowOrigin(origin),
      'access-control-expose-headers': 'Retry-After, WWW-Authenticate, X-Request-Id',
      vary: 'Origin',
    }),
  }
}

/** Reads a web stream whole, stopping (and cancelling it) once it exceeds `maxBytes`. */
async function readStream(
  stream: ReadableStream<Uint8Array> | null,
  maxBytes: number,
): Promise<Uint8Array | null | typeof TOO_LARGE | typeof UNREADABLE> {
  if (stream === null) return null
  const chunks: Uint8Array[] = []
  let total = 0
  try {
    const reader = stream.getReader()
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      total += value.byteLength
      if (total > maxBytes) {
        reader.cancel().catch(() => {})
        return TOO_LARGE
      }
      chunks.push(value)
    }
  } catch {
    return UNREADABLE
  }
  if (chunks.length <= 1) return chunks[0] ?? null
  const out = new Uint8Array(total)
  let at = 0
  for (const chunk of chunks) {
    out.set(chunk, at)
    at += chunk.byteLength
  }
  return out
}

const encoder = new TextEncoder()

/** The exchange view of a fetch `Request`. */
function fromRequest(request: Request): Incoming {
  const headers = request.headers
  return {
    method: request.method,
    target: request.url,
    header: (name) => headers.get(name),
    headers: () => Object.fromEntries(headers),
    hasBody: () => request.body !== null,
    gone: () => request.signal.aborted,
    signal: () => request.signal,
    readBody: (maxBytes) => {
      const direct = requestBodies.get(request)
      if (direct !== undefined && !request.bodyUsed && request.body?.locked === false) {
        requestBodies.delete(request)
        return direct(maxBytes)
      }
      return readStream(request.body, maxBytes)
    },
  }
}

/** The `Response` of an answer; its bytes kept for a host of this package to write (`untouchedBody`). */
function toResponse(out: Outgoing): Response {
  const headers = new Headers(out.headers)
  for (const cookie of out.cookies ?? []) headers.append('set-cookie', cookie)
  if (out.body === null) return new Response(null, { status: out.status, headers })
  if (out.body instanceof ReadableStream) return new Response(out.body, { status: out.status, headers })
  // Bytes with their length: a host writes them in one piece rather than as a chunked stream.
  const body = typeof out.body === 'string' ? encoder.encode(out.body) : out.body
  headers.set('content-length', String(body.byteLength))
  const response = new Response(body, { status: out.status, headers })
  responseBodies.set(response, body)
  return response
}

/**
 * Creates the HTTP API of `service` as a fetch handler: every route of the HTTP table, keys from
 * `<prefix>-API-KEY`, transactions from `<prefix>-TRANSACTION-ID`, errors as RFC 7807 problems.
 * Nothing a client sends makes it answer 5xx; an unexpected failure is logged and answered 500
 * without details. Mount it anywhere that takes `(Request) => Promise<Response>`.
 */
export function createHttpHandler(service: Service, options: HttpHandlerOptions = {}): FetchHandler {
  const exchange = exchangeHandler(service, options)
  const handler: FetchHandler = async (request) => {
    const out = await exchange(bridgedIncoming(request) ?? fromRequest(request))
    // The node bridge writes the answer back itself, as the native path does: a stand-in spares
    // building the `Response`.
    return isBridged(request) ? standInResponse(out, () => toResponse(out)) : toResponse(out)
  }
  exchangeHandlers.set(handler, exchange)
  return handler
}
