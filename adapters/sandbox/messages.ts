/**
 * The messages between the host and a sandbox worker, and the host's check of every message a
 * worker sends. A worker runs hostile code: if the code ever broke out of the engine, the worker's
 * messages would be the attacker's. So nothing a worker sends is used before `readWorkerMessage`
 * has checked its shape, types and sizes; anything else makes the host discard that worker.
 */

/** Limits on what a worker may send back, besides the answer's size limit. */
export const MAX_LOG_LINES = 100
export const MAX_LOG_LINE = 2000
export const MAX_MESSAGE = 2000

/** Host → worker: run `code` with the request (JSON text) within `timeoutMs` of starting it. */
export interface RunMessage {
  t: 'run'
  id: number
  code: string
  request: string
  timeoutMs: number
}

/** The ways a run fails inside the worker. */
export type WorkerFailure = 'invalid' | 'thrown' | 'timeout' | 'crashed'

/** Worker → host. `ready` once the engine is loaded, then one `done` per run, in order. */
export type WorkerMessage =
  | { t: 'ready' }
  | { t: 'done'; id: number; ok: true; json: string; logs: string[] }
  | { t: 'done'; id: number; ok: false; kind: WorkerFailure; message: string; status?: number }

/** Configuration a worker is started with (`workerData`). */
export interface WorkerConfig {
  /** Memory of one run (the engine's heap limit), in MiB. */
  memoryMb: number
  /** Longest answer, in JSON characters. */
  maxResultChars: number
  /** The engine's compiled WebAssembly module (a `WebAssembly.Module`), when the host compiled it. */
  wasmModule?: object
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
    if (t !== 'done') return null
    const id = own('id')
    if (typeof id !== 'number' || !Number.isSafeInteger(id)) return null
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
    const failure = { t: 'done' as const, id, ok: false as const, kind: kind as WorkerFailure, message: text }
    return status === undefined ? failure : { ...failure, status }
  } catch {
    return null
  }
}
