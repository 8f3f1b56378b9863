import type { IncomingMessage, ServerResponse } from 'node:http'
import { ServiceError } from '../../src/kernel/index.js'
import type { NodeListener } from './node.js'

/** A fault as the control plane shows it (`GET /_test/faults`). */
export interface Fault {
  id: number
  /** The method it applies to, upper case, or `*` for any. */
  method: string
  /** A route pattern (`/tokens/{id}`) or an exact path (`/tokens/abc`). */
  path: string
  /** The status answered (any 4xx or 5xx), or null for a delay alone. */
  status: number | null
  /** How many more matching requests it applies to. */
  times_left: number
  /** How long a matching request waits first, in milliseconds (real time). */
  delay_ms: number
}

/** Limits of a fault's fields, stated in docs/testing.md ("From any language"). */
const MAX_FAULTS = 100
const MAX_TIMES = 1_000_000
const MAX_DELAY_MS = 60_000
const FIELDS = new Set(['method', 'path', 'status', 'times', 'delay_ms'])

const invalid = (issues: Record<string, string[]>) =>
  new ServiceError('validation_failed', `the fault is not valid: ${Object.keys(issues).join(', ')}`, {
    issues,
  })

const whole = (value: unknown, min: number, max: number) =>
  typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max

/** A path pattern as a matcher: `{name}` stands for one segment; a trailing slash is ignored. */
function matcher(path: string): RegExp {
  const trimmed = path.length > 1 ? path.replace(/\/+$/, '') : path
  const source = trimmed
    .split('/')
    .map((segment) =>
      /^\{[^/{}]+\}$/.test(segment) ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
    )
    .join('/')
  return new RegExp(`^${source}/?$`)
}

/**
 * The faults the control plane injects: `add` one (checked: a 400 `ServiceError` for bad input,
 * nothing changed), `list`, `clear`, and `take` — the first fault matching a request, counted.
 */
export function faultRegistry() {
  const faults: (Fault & { match: RegExp })[] = []
  let next = 1
  return {
    add(input: unknown): Fault {
      if (typeof input !== 'object' || input === null || Array.isArray(input))
        throw invalid({ body: ['a JSON object'] })
      const b = input as Record<string, unknown>
      const issues: Record<string, string[]> = {}
      for (const key of Object.keys(b)) if (!FIELDS.has(key)) issues[key] = ['is not a field of a fault']
      const method = b['method'] ?? '*'
      if (typeof method !== 'string' || !/^(\*|[A-Za-z]{1,16})$/.test(method))
        issues['method'] = ['an HTTP method (GET, POST, …) or *']
      const path = b['path']
      if (typeof path !== 'string' || !/^\/[A-Za-z0-9._~%!$&'()*+,;=:@{}/-]{0,500}$/.test(path))
        issues['path'] = ['a path starting with / (a route pattern like /tokens/{id} or an exact path)']
      const status = b['status'] ?? null
      if (status !== null && !whole(status, 400, 599)) issues['status'] = ['a 4xx or 5xx status (400 to 599)']
      const times = b['times'] ?? 1
      if (!whole(times, 1, MAX_TIMES)) issues['times'] = [`a whole number from 1 to ${MAX_TIMES}`]
      const delay = b['delay_ms'] ?? 0
      if (!whole(delay, 0, MAX_DELAY_MS)) issues['delay_ms'] = [`a whole number from 0 to ${MAX_DELAY_MS}`]
      if (status === null && delay === 0 && issues['status'] === undefined)
        issues['status'] = ['give a status, a delay_ms, or both']
      if (Object.keys(issues).length > 0) throw invalid(issues)
      if (faults.length >= MAX_FAULTS) throw invalid({ body: [`at most ${MAX_FAULTS} faults at once`] })
      const fault = {
        id: next++,
        method: (method as string).toUpperCase(),
        path: path as string,
        status: status as number | null,
        times_left: times as number,
        delay_ms: delay as number,
      }
      faults.push({ ...fault, match: matcher(fault.path) })
      return fault
    },
    list: (): Fault[] => faults.map(({ match: _, ...fault }) => fault),
    clear: () => void faults.splice(0),
    /** The first fault for `method` and `path`, its count taken; undefined when none. */
    take(method: string, path: string): Fault | undefined {
      const i = faults.findIndex((f) => (f.method === '*' || f.method === method) && f.match.test(path))
      if (i === -1) return undefined
      const fault = faults[i]!
      fault.times_left--
      if (fault.times_left === 0) faults.splice(i, 1)
      const { match: _, ...shown } = fault
      return shown
    },
    get size() {
      return faults.length
    },
  }
}

/** The registry `faultRegistry` makes. */
export type FaultRegistry = ReturnType<typeof faultRegistry>

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  422: 'Unprocessable Entity',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
}

/** The answer of an injected fault: a problem document, `Retry-After` for 429 and 503. */
function faultAnswer(fault: Fault & { status: number }): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify({
    type: 'about:blank',
    title: TITLES[fault.status] ?? (fault.status < 500 ? 'Client Error' : 'Server Error'),
    status: fault.status,
    detail: `An injected fault (POST /_test/faults, id ${fault.id}).`,
  })
  const headers: Record<string, string> = {
    'content-type': 'application/problem+json',
    'cache-control': 'no-store',
    'content-length': String(Buffer.byteLength(body)),
  }
  if (fault.status === 429 || fault.status === 503) headers['retry-after'] = '1'
  return { body, headers }
}

/** Waits a fault's `delay_ms` (real time), then answers its status, or `next()` for a delay alone. */
function applyFault<T>(
  fault: Fault,
  answer: (fault: Fault & { status: number }) => T,
  next: () => T,
): Promise<T> | T {
  const go = () => (fault.status === null ? next() : answer({ ...fault, status: fault.status }))
  if (fault.delay_ms === 0) return go()
  return new Promise<T>((resolve) => setTimeout(() => resolve(go()), fault.delay_ms))
}

/**
 * `handler` (a fetch handler) with the registry's faults applied first, as `withFaults` does for
 * a node listener: what the test kit's `vault.http` and `vault.listen()` answer.
 */
export function withFetchFaults(
  handler: (request: Request) => Promise<Response>,
  registry: FaultRegistry,
): (request: Request) => Promise<Response> {
  return async (request) => {
    if (registry.size === 0) return handler(request)
    const fault = registry.take(request.method, new URL(request.url).pathname)
    if (fault === undefined) return handler(request)
    return applyFault(
      fault,
      (f) => {
        const { body, headers } = faultAnswer(f)
        return Promise.resolve(new Response(body, { status: f.status, headers }))
      },
      () => handler(request),
    )
  }
}

/**
 * `listener` with the registry's faults applied first: a matching request waits its `delay_ms`,
 * then answers the fault's status or, for a delay alone, goes on to `listener`. A request with a
 * body that answers a fault closes its connection (the body is not read).
 */
export function withFaults(listener: NodeListener, registry: FaultRegistry): NodeListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    if (registry.size === 0) return listener(req, res)
    const fault = registry.take(req.method ?? 'GET', (req.url ?? '/').split('?')[0]!)
    if (fault === undefined) return listener(req, res)
    void applyFault(
      fault,
      (f) => {
        if (res.destroyed) return
        if (!req.complete) res.setHeader('connection', 'close')
        const { body, headers } = faultAnswer(f)
        res.writeHead(f.status, headers).end(body)
      },
      () => {
        if (!res.destroyed) listener(req, res)
      },
    )
  }
}
