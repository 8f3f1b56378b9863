import type { Worker } from 'node:worker_threads'
import { memoryStore } from '../../adapters/memory/index.js'
import { sandboxRunner, startSandboxWorker } from '../../adapters/sandbox/index.js'
import type { RunMessage, WorkerConfig } from '../../adapters/sandbox/messages.js'
import { createService, manualClock, type ReactorFormulaInput, ServiceError } from '../../entry/index.js'
import type { FormulaRunner } from '../../src/kernel/runner.js'
import type { AccessRule, Permission } from '../../src/kernel/types.js'

export const REACTOR: Permission[] = ['reactor:create', 'reactor:read', 'reactor:update', 'reactor:delete']
export const TOKEN: Permission[] = ['token:create', 'token:read', 'token:update', 'token:delete', 'token:use']

/**
 * Sandbox runners a test file opens with `open(options)`, all closed after the file
 * (`afterAll(closeAll)`).
 */
export function runnersOfFile() {
  const opened: FormulaRunner[] = []
  return {
    open(options: Parameters<typeof sandboxRunner>[0] = {}): FormulaRunner {
      const runner = sandboxRunner(options)
      opened.push(runner)
      return runner
    },
    closeAll: async () => {
      await Promise.all(opened.splice(0).map((r) => r.close()))
    },
  }
}

/**
 * A `startWorker` for sandbox runners that counts the runs their workers start: a worker claims a
 * run in its shared `claims` cell (1) as it starts it, with no message, so the cells of the runs sent
 * are looked at (every millisecond while someone waits). `started(n)` resolves once `n` runs have
 * started in all. Tests wait on it, not on a sleep, for a run to hold a worker.
 */
export function countingStarts(start: (config: WorkerConfig) => Worker = startSandboxWorker) {
  let count = 0
  const sent: { claims: Int32Array; cell: number }[] = []
  const waiting: { n: number; resolve: () => void }[] = []
  let timer: NodeJS.Timeout | undefined
  const look = () => {
    for (let i = sent.length - 1; i >= 0; i--) {
      const state = Atomics.load(sent[i]!.claims, sent[i]!.cell)
      if (state === 0) continue
      if (state === 1) count++
      sent.splice(i, 1)
    }
    for (const w of waiting.filter((w) => count >= w.n)) {
      waiting.splice(waiting.indexOf(w), 1)
      w.resolve()
    }
    if (!waiting.length) {
      clearInterval(timer)
      timer = undefined
    }
  }
  return {
    startWorker(config: WorkerConfig): Worker {
      const worker = start(config)
      const claims = new Int32Array(config.claims)
      const post = worker.postMessage.bind(worker)
      worker.postMessage = (message: RunMessage) => {
        sent.push({ claims, cell: message.cell })
        post(message)
      }
      return worker
    },
    started(n: number): Promise<void> {
      return new Promise<void>((resolve) => {
        waiting.push({ n, resolve })
        look()
        timer ??= setInterval(look, 1)
      })
    },
    count(): number {
      look()
      return count
    },
  }
}

/** The default sandbox runner shared by a test file; services get it without `close`, the file closes it. */
export function sharedRunner(options: Parameters<typeof sandboxRunner>[0] = {}) {
  let runner: FormulaRunner | undefined
  return {
    get(): FormulaRunner {
      runner ??= sandboxRunner({ poolSize: 2, ...options })
      const shared = runner
      return { check: (c) => shared.check(c), run: (c, r, o) => shared.run(c, r, o), close: async () => {} }
    },
    close: async () => runner?.close(),
  }
}

/** A request parameter of a formula body. */
export type RequestParameter = ReactorFormulaInput['request_parameters'][number]

/** The fields of a formula body but its type. */
type FormulaFields = Omit<ReactorFormulaInput, 'type'>

/**
 * A valid formula body, private unless `overrides` gives `type: 'official'` (a body for
 * `admin.createOfficialFormula`); `overrides` replace fields.
 */
export function formulaBody<T extends 'private' | 'official' = 'private'>(
  overrides: Partial<FormulaFields> & { type?: T } = {},
): FormulaFields & { type: NoInfer<T> } {
  return {
    name: 'Card Lookup',
    description: 'looks a card up',
    type: 'private' as T,
    code: 'module.exports = async function (req) { return { raw: { args: req.args, configuration: req.configuration } } }',
    configuration: [{ name: 'region', type: 'string' }],
    request_parameters: [{ name: 'card.number', type: 'string' }],
    ...overrides,
  }
}

/**
 * A service on a memory store with a manual clock and two tenants, `a` and `b`, each with a
 * management client (`reactor:*`) and a private client (every token permission, no rules).
 */
export async function world(options: { runner?: FormulaRunner | null; reactorTimeoutMs?: number } = {}) {
  const clock = manualClock('2030-01-01T00:00:00.000Z')
  const store = memoryStore()
  const service = createService({
    store,
    clock,
    ...(options.runner !== undefined ? { runner: options.runner } : {}),
    ...(options.reactorTimeoutMs ? { reactorTimeoutMs: options.reactorTimeoutMs } : {}),
  })
  const tenant = async (name: string) => {
    const t = await service.admin.createTenant({ name })
    const app = async (
      type: 'private' | 'public' | 'management',
      permissions: Permission[],
      rules?: AccessRule[],
    ) => {
      const made = await service.admin.createApplication({
        tenantId: t.id,
        name: `${name} ${type}`,
        type,
        permissions,
        ...(rules ? { rules } : {}),
      })
      return { ...made, client: service.connect(made.key) }
    }
    const management = await app('management', REACTOR)
    const priv = await app('private', TOKEN)
    return { tenant: t, app, management, private: priv, admin: management.client, client: priv.client }
  }
  const a = await tenant('a')
  const b = await tenant('b')
  return { clock, store, service, a, b }
}

/** Awaits `promise` and returns the ServiceError it rejects with (fails the test if it resolves). */
export async function failure(promise: Promise<unknown>): Promise<ServiceError> {
  try {
    await promise
  } catch (error) {
    if (error instanceof ServiceError) return error
    throw error
  }
  throw new Error('expected a ServiceError, but the call succeeded')
}
