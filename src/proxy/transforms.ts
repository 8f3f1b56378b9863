import type { Ctx, Principal } from '../call/index.js'
import type {
  EgressLimits,
  EgressRequest,
  EgressResponse,
  FormulaRequest,
  Json,
  StoredProxy,
} from '../kernel/index.js'
import { jsonShape, MAX_INPUT_DEPTH, MAX_JSON_VALUES, ServiceError, statusOfError } from '../kernel/index.js'
import { runFailure } from '../reactors/index.js'
import { tokenOperations } from '../tokens/index.js'
import { bodyKind, utf8 } from './bodies.js'
import type { ProxyAnswer } from './forward.js'
import { BT_ORIGIN, transformModule } from './transform-code.js'

/**
 * Proxy transforms: a pre-configured proxy's `request_transform` / `response_transform` code, run
 * in the formula runner (the sandbox reactors use, bounded by `reactorTimeoutMs` and the runner's
 * memory limit) with the reference's contract: the code's exported function gets
 * `{ args, configuration, bt }` and answers `{ body, headers }`. A throw answers as a reactor's
 * does (the formulas SDK's errors keep their status and `errors`; anything else is 500; code that
 * can't load is 422), and `CustomHttpResponseError` answers its own status, headers and body.
 */

/** The request side of a call, as a request transform sees it (`args`). */
export interface TransformRequest {
  /** Parsed when the content type is JSON, else the text (null when none). */
  body: Json
  headers: Record<string, string>
  method: string
  /** The path after `/proxy` (`/sub/path`). */
  path: string
  /** The query as received, with its `?` (`?param=value`), or empty. */
  query: string
}

/** What a transform answered: the body to send on (object or text) and the headers. */
export interface Transformed {
  body: Json | undefined
  headers: Record<string, string>
}

/** A transform's outcome: what to carry on with, or the answer its `CustomHttpResponseError` asked for. */
export type TransformOutcome = { kind: 'next'; value: Transformed } | { kind: 'answer'; answer: ProxyAnswer }

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v)

/**
 * A body as a transform sees it: JSON parsed when declared JSON, else text; text too when it does
 * not parse, or nests deeper than `MAX_INPUT_DEPTH` or holds more than `MAX_JSON_VALUES` values (a
 * body 500 000 levels deep, parsed, overflowed the stack handing it to the sandbox: a 500).
 */
export function transformBody(bytes: Uint8Array | null, contentType: string | undefined): Json {
  if (bytes === null || bytes.byteLength === 0) return null
  const text = utf8(bytes) ?? Buffer.from(bytes).toString('base64')
  if (bodyKind(contentType) !== 'json') return text
  if (jsonShape(text, MAX_INPUT_DEPTH, MAX_JSON_VALUES) !== null) return text
  try {
    return JSON.parse(text) as Json
  } catch {
    return text
  }
}

/** A transformed body as bytes: text as it is, anything else as JSON (null: no body). */
export function bodyBytesOf(body: Json | undefined): Uint8Array | null {
  if (body === undefined || body === null) return null
  return new TextEncoder().encode(typeof body === 'string' ? body : JSON.stringify(body))
}

/**
 * The bytes of headers a transform may answer, in all (each name, value and `: ` and CR LF): what
 * Node takes of a destination's answer (`maxHeaderSize`). A transform answered 2 800 headers, 300 KB.
 */
export const TRANSFORM_HEADER_BYTES = 16 * 1024

/**
 * Header values as strings; names that are not header names, and values HTTP can't carry (a line
 * break, NUL, a character past Latin-1: what a transform copied from a caller's body, say), dropped.
 * More than `TRANSFORM_HEADER_BYTES` in all is the transform's failure.
 */
function headersOf(value: unknown, fallback: Record<string, string>): Record<string, string> {
  if (value === undefined || value === null) return fallback
  if (!isObject(value)) throw thrownShape('headers must be an object')
  const out: Record<string, string> = {}
  let bytes = 0
  for (const [name, v] of Object.entries(value)) {
    if (!/^[A-Za-z0-9_!#$%&'*+.^`|~-]+$/.test(name) || v === undefined || v === null) continue
    const text = typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v)
    if (/[^\t\x20-\x7e\x80-\xff]/.test(text)) continue
    bytes += name.length + text.length + 4
    if (bytes > TRANSFORM_HEADER_BYTES)
      throw thrownShape(`headers must be at most ${TRANSFORM_HEADER_BYTES} bytes in all`)
    out[name.toLowerCase()] = text
  }
  return out
}

const thrownShape = (message: string) =>
  new ServiceError('formula_failed', `the proxy transform ${message}`, { status: 500 })

/** The principal whose access the transform's `bt` has: the proxy's `application`, or none. */
async function applicationOf(ctx: Ctx, proxy: StoredProxy): Promise<Principal | null> {
  if (proxy.application_id === undefined) return null
  const app = await ctx.store.getApplication(proxy.tenant_id, proxy.application_id)
  if (!app || (app.expires_at !== undefined && app.expires_at <= ctx.now())) return null
  return {
    tenantId: app.tenant_id,
    id: app.id,
    kind: 'application',
    type: app.type,
    permissions: app.permissions,
    rules: app.rules,
  }
}

/** Runs one transform of `proxy` with `args`; answers its outcome or throws the problem it maps to. */
export async function runTransform(
  ctx: Ctx,
  proxy: StoredProxy,
  code: string,
  args: { [key: string]: Json },
  fallbackHeaders: Record<string, string>,
): Promise<TransformOutcome> {
  const runner = ctx.runner
  if (!runner)
    throw new ServiceError('formula_invalid', 'no formula runner is configured to run proxy transforms')
  const app = await applicationOf(ctx, proxy)
  const timeoutMs = ctx.options.reactorTimeoutMs
  const outcome = await runner.run(
    transformModule(code),
    // `with_bt` is read by the transform's module (transform-code.ts), never by the tenant's code.
    { args, configuration: proxy.configuration, with_bt: app !== null } as FormulaRequest,
    {
      timeoutMs,
      isolationKey: ctx.principal.tenantId,
      egress: [...ctx.options.reactorEgress, BT_ORIGIN],
      fetch: (request, limits) => transformFetch(ctx, app, request, limits),
    },
  )
  if (!outcome.ok) throw runFailure(outcome, timeoutMs)
  return outcomeOf(outcome.value, fallbackHeaders)
}

/** The transform's answer read: `{ value: { body, headers } }` or `{ custom: { status, headers, body } }`. */
function outcomeOf(answer: unknown, fallbackHeaders: Record<string, string>): TransformOutcome {
  if (!isObject(answer)) throw thrownShape('answered nothing')
  if (isObject(answer.custom)) {
    const { status, headers, body } = answer.custom
    const code =
      typeof status === 'number' && Number.isInteger(status) && status >= 200 && status <= 599 ? status : 500
    const bytes = bodyBytesOf(body as Json | undefined)
    const shown = headersOf(headers, {})
    if (bytes !== null && typeof body !== 'string' && shown['content-type'] === undefined)
      shown['content-type'] = 'application/json'
    const text = bytes === null ? '' : new TextDecoder().decode(bytes)
    return {
      kind: 'answer',
      answer: { status: code, headers: shown, body: text, body_encoding: 'utf8', destination_status: code },
    }
  }
  const value = answer.value
  if (value === undefined || value === null)
    return { kind: 'next', value: { body: undefined, headers: fallbackHeaders } }
  if (!isObject(value)) throw thrownShape('must answer an object: { body, headers }')
  return {
    kind: 'next',
    value: { body: value.body as Json | undefined, headers: headersOf(value.headers, fallbackHeaders) },
  }
}

/**
 * The transform's `fetch`: a request to `BT_ORIGIN` is its `bt` calling the vault as the proxy's
 * application (404 without one); any other goes out through the egress client under the egress list.
 */
async function transformFetch(
  ctx: Ctx,
  app: Principal | null,
  request: EgressRequest,
  limits: EgressLimits,
): Promise<EgressResponse> {
  if (!request.url.startsWith(`${BT_ORIGIN}/`)) return ctx.egress(ctx.options.reactorEgress, request, limits)
  const reply = (status: number, value: unknown): EgressResponse => ({
    status,
    statusText: '',
    headers: { 'content-type': 'application/json' },
    body: value === undefined ? '' : JSON.stringify(value),
    url: request.url,
    redirected: false,
  })
  if (app === null) return reply(404, { status: 404, detail: 'the proxy has no application for bt' })
  try {
    return reply(200, await btCall({ ...ctx, principal: app, transactionId: undefined }, request))
  } catch (error) {
    if (!(error instanceof ServiceError)) throw error
    const status = statusOfError(error)
    return reply(status, { status, detail: error.message, ...(error.issues ? { errors: error.issues } : {}) })
  }
}

/** One `bt` call of a transform, made as the proxy's application. */
async function btCall(ctx: Ctx, request: EgressRequest): Promise<unknown> {
  const path = new URL(request.url).pathname
  const text =
    typeof request.body === 'string'
      ? request.body
      : new TextDecoder().decode(request.body ?? new Uint8Array())
  let body: unknown
  try {
    body = text === '' ? undefined : JSON.parse(text)
  } catch {
    throw new ServiceError('validation_failed', 'the bt request body is not JSON')
  }
  const tokens = tokenOperations(ctx)
  if (request.method === 'POST' && path === '/tokenize') return tokens.tokenize(body as never)
  if (request.method === 'POST' && path === '/detokenize') return tokens.detokenize(body as never)
  if (request.method === 'POST' && path === '/tokens') return tokens.create(body as never)
  const id = /^\/tokens\/([^/]+)$/.exec(path)?.[1]
  if (request.method === 'GET' && id !== undefined) return tokens.get(decodeURIComponent(id))
  throw new ServiceError('not_found', `bt has no ${request.method} ${path}`)
}
