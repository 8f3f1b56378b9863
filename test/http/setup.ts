import { expect } from 'vitest'
import type { HttpHandlerOptions, HttpLogEvent } from '../../adapters/http/index.js'
import { PERMISSIONS_BY_TYPE } from '../../src/applications/permissions.js'
import { type FormulaRunner, lazyRunner } from '../../src/kernel/runner.js'
import type { AccessRule, Permission } from '../../src/kernel/types.js'
import { createTestVault } from '../../testing/vault.js'

export const ALL_TOKEN: Permission[] = [...PERMISSIONS_BY_TYPE.private]
export const ALL_MANAGEMENT: Permission[] = [...PERMISSIONS_BY_TYPE.management]
export const REVEAL_ALL: AccessRule[] = [
  {
    description: 'all',
    priority: 1,
    container: '/',
    transform: 'reveal',
    // A rule grants token permissions only (not `token-intent:*`, which the application holds).
    permissions: ALL_TOKEN.filter((p) => p.startsWith('token:')),
  },
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
 * A test vault (`tokenvault/testing`) with a tenant `acme`, the default formula runner unless one is
 * given, keys of every type, a `call` helper that builds `new Request()`s for its handler, and the
 * events the handler logged.
 */
export async function setup(setupOptions: HttpHandlerOptions & { runner?: FormulaRunner | null } = {}) {
  const { runner, ...options } = setupOptions
  const events: HttpLogEvent[] = []
  const vault = await createTestVault({
    tenantName: 'acme',
    runner:
      runner !== undefined
        ? runner
        : lazyRunner(async () => (await import('../../adapters/sandbox/index.js')).sandboxRunner()),
    http: { log: (e) => events.push(e), ...options },
  })
  const { clock, service, tenant } = vault
  const handler = vault.http
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
  const keys = { full: vault.keys.private, management: vault.keys.management, public: vault.keys.public }
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
  return { vault, clock, service, handler, tenant, keyFor, keys, call, events }
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
