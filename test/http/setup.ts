import { expect } from 'vitest'
import { createHttpHandler, type HttpHandlerOptions, type HttpLogEvent } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../src/index.js'
import type { FormulaRunner } from '../../src/runner.js'
import { PERMISSIONS_BY_TYPE } from '../../src/schemas/access.js'
import type { AccessRule, Permission } from '../../src/types.js'

export const ALL_TOKEN: Permission[] = [...PERMISSIONS_BY_TYPE.private]
export const ALL_MANAGEMENT: Permission[] = [...PERMISSIONS_BY_TYPE.management]
export const REVEAL_ALL: AccessRule[] = [
  { description: 'all', priority: 1, container: '/', transform: 'reveal', permissions: ALL_TOKEN },
]

/** How `call` sends a request. */
export interface CallOptions {
  key?: string
  /** A JSON body (serialized here), or a string / stream sent as is. */
  body?: unknown
  headers?: Record<string, string>
  transactionId?: string
}

/**
 * A handler over a fresh memory service with a manual clock and one tenant, keys of every type,
 * a `call` helper that builds `new Request()`s, and the events the handler logged.
 */
export async function setup(setupOptions: HttpHandlerOptions & { runner?: FormulaRunner | null } = {}) {
  const { runner, ...options } = setupOptions
  const clock = manualClock('2030-01-01T00:00:00.000Z')
  const service = createService({ store: memoryStore(), clock, ...(runner !== undefined ? { runner } : {}) })
  const events: HttpLogEvent[] = []
  const handler = createHttpHandler(service, { log: (e) => events.push(e), ...options })
  const tenant = await service.admin.createTenant({ name: 'acme' })
  const keyFor = async (
    type: 'private' | 'public' | 'management',
    permissions: Permission[] = [],
    rules?: AccessRule[],
    tenantId = tenant.id,
  ) => {
    const made = await service.admin.createApplication({
      tenantId,
      name: `${type} app`,
      type,
      permissions,
      ...(rules ? { rules } : {}),
    })
    return made.key
  }
  const keys = {
    full: await keyFor('private', ALL_TOKEN, REVEAL_ALL),
    management: await keyFor('management', ALL_MANAGEMENT),
    public: await keyFor('public', ['token:create']),
  }
  const prefix = options.headerPrefix ?? 'SVC'
  const call = (method: string, path: string, o: CallOptions = {}) => {
    const headers = new Headers(o.headers)
    if (o.key !== undefined) headers.set(`${prefix}-API-KEY`, o.key)
    if (o.transactionId !== undefined) headers.set(`${prefix}-TRANSACTION-ID`, o.transactionId)
    let body: RequestInit['body'] | undefined
    if (typeof o.body === 'string' || o.body instanceof ReadableStream) body = o.body
    else if (o.body !== undefined) {
      body = JSON.stringify(o.body)
      if (!headers.has('content-type')) headers.set('content-type', 'application/json')
    }
    const init: RequestInit & { duplex?: 'half' } = { method, headers }
    if (body !== undefined) init.body = body
    if (body instanceof ReadableStream) init.duplex = 'half'
    return handler(new Request(`http://vault.test${path}`, init))
  }
  return { clock, service, handler, tenant, keyFor, keys, call, events }
}

/** Reads a JSON answer, checking its status and content type. */
export async function json<T = Record<string, unknown>>(response: Response, status: number): Promise<T> {
  const text = await response.text()
  expect(response.status, text).toBe(status)
  expect(response.headers.get('content-type')).toBe('application/json')
  return JSON.parse(text) as T
}

/** Checks an answer with no body. */
export async function empty(response: Response, status: number): Promise<void> {
  const text = await response.text()
  expect(response.status, text).toBe(status)
  expect(text).toBe('')
  expect(response.headers.get('content-type')).toBeNull()
}

/** Reads an RFC 7807 problem answer and checks its shape: `type`, `title`, `status`, `detail`, `errors?`. */
export async function problem(
  response: Response,
  status: number,
): Promise<{
  type: string
  title: string
  status: number
  detail: string
  errors?: Record<string, string[]>
}> {
  const text = await response.text()
  expect(response.status, text).toBe(status)
  expect(response.headers.get('content-type')).toBe('application/problem+json')
  const body = JSON.parse(text)
  expect(Object.keys(body).every((k) => ['type', 'title', 'status', 'detail', 'errors'].includes(k))).toBe(
    true,
  )
  expect(body).toMatchObject({
    type: expect.any(String),
    title: expect.any(String),
    status,
    detail: expect.any(String),
  })
  expect(body.title.length).toBeGreaterThan(0)
  if (body.errors !== undefined) {
    expect(status).toBe(400)
    for (const messages of Object.values(body.errors)) {
      expect(Array.isArray(messages) && messages.every((m) => typeof m === 'string')).toBe(true)
    }
  }
  return body
}
