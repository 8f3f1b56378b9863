/**
 * The messages between the host and a sandbox worker, and the host's check of every message a
 * worker sends. A worker runs hostile code: if the code ever broke out of the engine, the worker's
 * messages would be the attacker's. So nothing a worker sends is used before `readWorkerMessage`
 * has checked its shape, types and sizes; anything else makes the host discard that worker.
 */

import { EGRESS_MAX_BODY_BYTES, type EgressRequest } from '../../src/kernel/index.js'

/** Limits on what a worker may send back, besides the answer's size limit. */
export const MAX_LOG_LINES = 100
export const MAX_LOG_LINE = 2000
export const MAX_MESSAGE = 2000
/** Limits on a thrown error's `errors` block: keys, messages per key, characters per key and message. */
export const MAX_ERROR_KEYS = 20
export const MAX_ERROR_MESSAGES = 20
export const MAX_ERROR_TEXT = 1000

/** Requests one run may make with `fetch`. */
export const MAX_FETCHES = 50
/** Longest request (its JSON text) formula code may hand the host. */
export const MAX_FETCH_REQUEST_CHARS = 2 * EGRESS_MAX_BODY_BYTES + 64 * 1024

/** A thrown error's `errors` block: field (or `error`) to messages. */
export type ErrorsBlock = Record<string, string[]>

/** Host → worker: run `code` with the request (JSON text) within `timeoutMs` of starting it. */
export interface RunMessage {
  t: 'run'
  id: number
  code: string
  request: string
  timeoutMs: number
  /** Whether the run's code may use `fetch` (absent: no network); the host makes each request. */
  fetch?: true
  /** The run's cell in the worker's `claims` and `starts` (see `WorkerConfig`). */
  cell: number
}

/**
 * Host → worker: how request `n` of run `id` (a `fetch` message) ended: the response as JSON text,
 * or (`ok: false`) the message the formula's `fetch` rejects with.
 */
export interface FetchedMessage {
  t: 'fetched'
  id: number
  n: number
  ok: boolean
  payload: string
}

/** The ways a run fails inside the worker. */
export type WorkerFailure = 'invalid' | 'thrown' | 'timeout' | 'crashed'

/**
 * Worker → host. `ready` once the engine is loaded; then one `done` for each run it ran, in order.
 * A run's start is no message: the worker claims the run's cell in `claims` (see `WorkerConfig`).
 * While a run runs, `fetch` asks the host to make its request number `n` (1 to `MAX_FETCHES`):
 * `request` is its JSON text, `timeoutMs` the time the run has left.
 */
export type WorkerMessage =
  | { t: 'ready' }
  | { t: 'fetch'; id: number; n: number; request: string; timeoutMs: number }
  | { t: 'done'; id: number; ok: true; json: string; logs: string[] }
  | {
      t: 'done'
      id: number
      ok: false
      kind: WorkerFailure
      message: string
      status?: number
      errors?: ErrorsBlock
    }

/** Configuration a worker is started with (`workerData`). */
export interface WorkerConfig {
  /** Memory of one run (the engine's heap limit), in MiB. */
  memoryMb: number
  /** Longest answer, in JSON characters. */
  maxResultChars: number
  /** The engine's compiled WebAssembly module (a `WebAssembly.Module`), when the host compiled it. */
  wasmModule?: object
  /** The prelude's program text, when the host loaded it (else the worker loads it). */
  prelude?: string
  /** The run driver's program text, when the host loaded it (else the worker loads it). */
  driver?: string
  /**
   * One 32-bit cell per run the host sends (at the run's `cell`), shared with the host: the worker
   * runs a run only if it changes its cell from 0 (sent) to 1 (claimed), which it does once its
   * engine is restored after the previous run, as the run's code is about to run (so a worker that
   * dies before it never ran this run); the host may have changed it to 2 first, taking the run back
   * for another worker while it waited behind a long run.
   */
  claims: SharedArrayBuffer
  /**
   * One 64-bit float per run (at the run's `cell`), shared with the host: when the worker started the
   * run, `performance.timeOrigin + performance.now()` (ms), written just before it claims the run.
   */
  starts: SharedArrayBuffer
  /**
   * One 32-bit cell shared by the pool and all its workers: how many runs wait in the host's queue,
   * not yet sent to a worker.
   */
  backlog: SharedArrayBuffer
  /**
   * How long an idle worker watches for its next run before it sleeps (µs; 0: it sleeps at once),
   * while `backlog` is 0.
   */
  idleSpinUs?: number
  /** How much nicer than the host this thread runs once its engine is loaded (0 or absent: as the host). */
  nice?: number
}

const FAILURES = new Set<string>(['invalid', 'thrown', 'timeout', 'crashed'])

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

const isLogs = (value: unknown): value is string[] =>
  Array.isArray(value) &&
  value.length <= MAX_LOG_LINES &&
  value.every((line) => typeof line === 'string' && line.length <= MAX_LOG_LINE)

/**
 * `message` as a `WorkerMessage` when it is exactly one (right types, sizes within the limits),
 * else null. Never throws, whatever `message` is (getters, proxies and prototypes are not trusted:
 * structured clone delivers plain data, and only own data properties are read).
 */
export function readWorkerMessage(message: unknown, maxResultChars: number): WorkerMessage | null {
  try {
    if (!isRecord(message)) return null
    const own = (key: string): unknown => {
      const descriptor = Object.getOwnPropertyDescriptor(message, key)
      return descriptor && 'value' in descriptor ? descriptor.value : undefined
    }
    const t = own('t')
    if (t === 'ready') return { t }
    if (t !== 'done' && t !== 'fetch') return null
    const id = own('id')
    if (typeof id !== 'number' || !Number.isSafeInteger(id)) return null
    if (t === 'fetch') return readFetchMessage(id, own)
    const ok = own('ok')
    if (ok === true) {
      const json = own('json')
      const logs = own('logs')
      if (typeof json !== 'string' || json.length > maxResultChars || !isLogs(logs)) return null
      return { t, id, ok, json, logs: [...logs] }
    }
    if (ok !== false) return null
    const kind = own('kind')
    const text = own('message')
    const status = own('status')
    if (typeof kind !== 'string' || !FAILURES.has(kind)) return null
    if (typeof text !== 'string' || text.length > MAX_MESSAGE) return null
    if (status !== undefined && (typeof status !== 'number' || !Number.isInteger(status))) return null
    const rawErrors = own('errors')
    const errors = rawErrors === undefined ? undefined : readErrors(rawErrors)
    if (errors === null) return null
    const failure: Extract<WorkerMessage, { ok: false }> = {
      t: 'done',
      id,
      ok: false,
      kind: kind as WorkerFailure,
      message: text,
    }
    if (status !== undefined) failure.status = status
    if (errors) failure.errors = errors
    return failure
  } catch {
    return null
  }
}

/** A `fetch` message of run `id` with the fields `own` reads, when they are right; else null. */
function readFetchMessage(id: number, own: (key: string) => unknown): WorkerMessage | null {
  const n = own('n')
  const request = own('request')
  const timeoutMs = own('timeoutMs')
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_FETCHES) return null
  if (typeof request !== 'string' || request.length > MAX_FETCH_REQUEST_CHARS) return null
  if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs)) return null
  return { t: 'fetch', id, n, request, timeoutMs }
}

/**
 * A `fetch` request's JSON text (made by the prelude, or by hostile code that broke out of the
 * engine) as a request when it is one: `url` and `method` strings, `headers` an object of strings,
 * `body` a string or absent. Null otherwise; never throws.
 */
export function readFetchRequest(text: string): EgressRequest | null {
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch {
    return null
  }
  if (!isRecord(raw)) return null
  const { url, method, headers, body } = raw
  if (typeof url !== 'string' || typeof method !== 'string' || !isRecord(headers)) return null
  const entries = Object.entries(headers)
  if (!entries.every(([, value]) => typeof value === 'string')) return null
  // Own properties whatever their names (`__proto__` included): the policy checks the names next.
  const flat = Object.fromEntries(entries) as Record<string, string>
  if (body !== undefined && typeof body !== 'string') return null
  return body === undefined ? { url, method, headers: flat } : { url, method, headers: flat, body }
}

const UNSAFE_KEYS = new Set(['__proto__', 'constructor', 'prototype'])

/**
 * `value` as an `errors` block when it is one within the limits (an object of arrays of strings;
 * keys and messages no longer than `MAX_ERROR_TEXT`), else null. Only own data properties are read;
 * keys that could reach a prototype are refused. With `cut`, a value over the limits is cut down to
 * them instead (how the worker reads what formula code threw).
 */
export function readErrors(value: unknown, cut = false): ErrorsBlock | null {
  if (!isRecord(value)) return null
  const keys = Object.keys(value)
  if (keys.length > MAX_ERROR_KEYS && !cut) return null
  const out: ErrorsBlock = {}
  for (const key of keys.slice(0, MAX_ERROR_KEYS)) {
    const descriptor = Object.getOwnPropertyDescriptor(value, key)
    const list = descriptor && 'value' in descriptor ? descriptor.value : undefined
    if (UNSAFE_KEYS.has(key) || !Array.isArray(list)) return null
    if ((key.length > MAX_ERROR_TEXT || list.length > MAX_ERROR_MESSAGES) && !cut) return null
    const messages: string[] = []
    for (const message of list.slice(0, MAX_ERROR_MESSAGES)) {
      if (typeof message !== 'string' || (message.length > MAX_ERROR_TEXT && !cut)) return null
      messages.push(message.slice(0, MAX_ERROR_TEXT))
    }
    Object.defineProperty(out, key.slice(0, MAX_ERROR_TEXT), {
      value: messages,
      enumerable: true,
      writable: true,
      configurable: true,
    })
  }
  return out
}
