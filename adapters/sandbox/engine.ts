import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import RELEASE_SYNC from '@jitl/quickjs-wasmfile-release-sync'
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSContext,
  type QuickJSHandle,
  type QuickJSRuntime,
  type QuickJSSyncVariant,
  type QuickJSWASMModule,
  Scope,
} from 'quickjs-emscripten-core'
import { EGRESS_MAX_BODY_BYTES, EgressError, egressFetch } from '../../src/reactors/egress.js'
import { type BridgeRun, bridgeRun, endBridge, installCryptoBridge } from './crypto-bridge.js'
import { GuestTextError, guestString } from './guest-text.js'
import {
  type ErrorsBlock,
  MAX_LOG_LINE,
  MAX_LOG_LINES,
  MAX_MESSAGE,
  readErrors,
  type WorkerFailure,
  type WorkerMessage,
} from './messages.js'
import { driverSource, preludeSource } from './prelude-source.js'

const MIB = 1024 * 1024
const PAGE = 65_536
/** What the WebAssembly memory holds besides the formula's heap: the engine's data and stack. */
const HEADROOM_MB = 32
/** The engine's own C stack limit for a run (deep recursion ends in a `RangeError`-like error). */
const STACK_BYTES = 512 * 1024

const PARAMS = 'exports, require, module, __filename, __dirname'
/** The module wrapper around a formula's code, as Node wraps a CommonJS module (line 1 stays line 1). */
const wrapModule = (code: string): string => `(function (${PARAMS}) {${code}\n})`
/**
 * A second wrapper used only by the compile check: code written to close the first wrapper early
 * (`}); ... (function () {`) does not parse in this one. (Code that still managed to close both runs
 * only at load time in its own fresh context, which gives it nothing a module body lacks.)
 */
const wrapDeclaration = (code: string): string => `function formula(${PARAMS}) {${code}\n}`

type WasmMemory = { buffer: ArrayBuffer }
/** WebAssembly's `Memory` (Node has it; the core's type library does not declare it). */
const Memory = (
  globalThis as unknown as {
    WebAssembly: { Memory: new (descriptor: { initial: number; maximum: number }) => WasmMemory }
  }
).WebAssembly.Memory
/** WebAssembly's `Instance`, made from a compiled module. */
const Instance = (
  globalThis as unknown as {
    WebAssembly: { Instance: new (module: object, imports: object) => { exports: object } }
  }
).WebAssembly.Instance
const VARIANT = RELEASE_SYNC as unknown as QuickJSSyncVariant

type VariantOptions = Parameters<typeof newVariant>[1]

/**
 * The engine's WebAssembly code, compiled once: workers get it with their start data and only
 * instantiate it (each with its own capped memory), which keeps a worker's start short.
 */
export async function compileEngine(): Promise<object> {
  const path = createRequire(import.meta.url).resolve('@jitl/quickjs-wasmfile-release-sync/wasm')
  const bytes = await readFile(path)
  const wasm = (globalThis as unknown as { WebAssembly: { compile(b: Uint8Array): Promise<object> } })
    .WebAssembly
  return wasm.compile(bytes)
}

/** A new engine module whose WebAssembly memory can never grow past `maximumMb`, and that memory. */
async function loadModule(
  maximumMb: number,
  compiled?: object,
): Promise<{ module: QuickJSWASMModule; memory: WasmMemory }> {
  const maximum = Math.ceil((maximumMb * MIB) / PAGE)
  const wasmMemory = new Memory({ initial: Math.min(256, maximum), maximum })
  const options: VariantOptions = { wasmMemory: wasmMemory as VariantOptions['wasmMemory'] & object }
  if (compiled) {
    // Instantiated at once, in this thread: `WebAssembly.instantiate` of a compiled module may wait
    // behind the engine's background compilation, tens of milliseconds on a busy machine.
    options.emscriptenModule = {
      instantiateWasm(imports: object, done: (instance: object) => void) {
        const instance = new Instance(compiled, imports)
        done(instance)
        return instance.exports
      },
    } as unknown as NonNullable<VariantOptions['emscriptenModule']>
  }
  return { module: await newQuickJSWASMModuleFromVariant(newVariant(VARIANT, options)), memory: wasmMemory }
}

/**
 * Where the engine's C stack lies in its memory, for the builds of the engine whose layout is
 * known (by the SHA-256 of their WebAssembly file): data from 0, then the stack, growing down from
 * `top` for `bytes`, then the heap from `top`. Only the stack is left out of a snapshot: whatever
 * a run leaves below the stack pointer is dead. Another build is snapshotted whole (still exact,
 * only slower), which `test/reactors/snapshot.test.ts` would notice.
 */
const KNOWN_LAYOUTS: Record<string, { top: number; bytes: number }> = {
  // @jitl/quickjs-wasmfile-release-sync 0.32.0: its stack pointer starts at 5333088, 5 MiB of stack.
  '105c3bed22d457e43e3d1c3c1c6959fda62a8fe06f0fc8a985303c3a2be72232': { top: 5_333_088, bytes: 5 * MIB },
}

/** The stack of the installed engine build, if its layout is known. */
function stackOfBuild(): { top: number; bytes: number } | undefined {
  try {
    const path = createRequire(import.meta.url).resolve('@jitl/quickjs-wasmfile-release-sync/wasm')
    return KNOWN_LAYOUTS[createHash('sha256').update(readFileSync(path)).digest('hex')]
  } catch {
    return undefined
  }
}

/** What one run answers (the worker adds the run's id). */
export type RunResult =
  | { ok: true; json: string; logs: string[] }
  | { ok: false; kind: WorkerFailure; message: string; status?: number; errors?: ErrorsBlock }

const NOT_AVAILABLE =
  'is not available: reactor formulas run without network (unless the host allows origins), files, processes and modules other than the reactor formulas SDK, crypto, util, buffer, url and timers (see README, "What a formula can use")'

const cut = (text: string, max: number) => (text.length > max ? text.slice(0, max) : text)

/**
 * A QuickJS engine compiled to WebAssembly, with its linear memory capped: the formula's whole
 * world. Code inside it can call only the functions handed to it here (`console.*`, a `require`
 * that refuses), and every object it sees is made by the engine inside that memory, so none of the
 * host's objects — errors, promises, stack frames — ever reaches it.
 *
 * Every run starts from the same state, byte for byte: once loaded, the engine makes one runtime
 * and context, sets it up, and copies its WebAssembly memory (a snapshot, see `Snapshot`). After a
 * run the memory is copied back, which undoes everything the run did in the engine — globals,
 * prototypes, module state, pending jobs and timers, the heap and its accounting, a run stopped at
 * its deadline or out of memory — far cheaper than a new runtime and context (QuickJS makes its
 * built-ins one by one). The copy back is done while the worker is idle, after it has answered. A
 * run is stopped by the engine's interrupt handler once its deadline passes. If the engine itself
 * fails (its memory exhausted past the runtime's limit, an internal assertion), `broken` is set:
 * the worker answers the run as `crashed` and exits, and the host starts a new one.
 */
export class Engine {
  broken = false
  /** Whether a run has used the engine since its memory was last restored. */
  private dirty = false
  /** Whether a run is under way (it may wait, for a timer or a request, while the worker is idle). */
  private running = false

  private constructor(
    private readonly prepared: Prepared,
    private readonly snapshot: Snapshot,
    private readonly memoryMb: number,
    private readonly maxResultChars: number,
  ) {}

  /**
   * Loads a new engine whose WebAssembly memory can never grow past `memoryMb` + headroom, with the
   * program text of the prelude and the run driver (`preludeSource()` and `driverSource()` unless
   * given). With `whole`, its snapshot is all of its memory, as for an engine build whose layout is
   * not known (tests use it).
   */
  static async load(
    memoryMb: number,
    maxResultChars: number,
    compiled?: object,
    sources: { prelude?: string | undefined; driver?: string | undefined } = {},
    whole = false,
  ): Promise<Engine> {
    const { module, memory } = await loadModule(memoryMb + HEADROOM_MB, compiled)
    const prelude = sources.prelude ?? (await preludeSource())
    const prepared = prepare(module, memoryMb, prelude, sources.driver ?? (await driverSource()))
    return new Engine(prepared, takeSnapshot(memory, prepared, whole), memoryMb, maxResultChars)
  }

  /** Bytes copied back after each run (tests check that the stack is left out). */
  get snapshotBytes(): number {
    return this.snapshot.ranges.reduce((sum, range) => sum + range.bytes.length, 0)
  }

  /**
   * Restores the engine to its snapshot after a run, so that the next run does not wait for it
   * (nothing while a run is under way).
   */
  prepare(): void {
    if (this.broken || !this.dirty || this.running) return
    try {
      restore(this.snapshot)
      this.dirty = false
    } catch {
      this.broken = true
    }
  }

  /** Runs `code` with `request` (JSON text), `fetch` reaching the `egress` origins; never rejects. */
  async run(code: string, request: string, timeoutMs: number, egress?: string[]): Promise<RunResult> {
    if (this.broken) return { ok: false, kind: 'crashed', message: 'the formula engine failed' }
    this.prepare()
    if (this.broken) return { ok: false, kind: 'crashed', message: 'the formula engine failed' }
    if (this.running) return { ok: false, kind: 'crashed', message: 'the formula engine is busy' }
    this.dirty = true
    this.running = true
    const prepared = this.prepared
    fresh(prepared, performance.now() + timeoutMs, timeoutMs, this.memoryMb)
    let result: RunResult
    try {
      // The code is compiled before anything else changes the context.
      const failed = load(prepared, code)
      if (failed) result = failed
      else {
        if (egress?.length) allowFetch(prepared, egress)
        result = await execute(prepared, request, this.maxResultChars, timeoutMs)
      }
    } catch (error) {
      this.running = false
      // A failure of the engine itself, not of the code: its memory can't be trusted any more.
      this.broken = true
      endIo(prepared)
      const text = error instanceof Error ? error.message : ''
      const outOfMemory = /out of bounds|out of memory|Aborted|unreachable/i.test(text)
      return {
        ok: false,
        kind: 'crashed',
        message: outOfMemory ? 'it ran out of memory' : 'the formula engine failed',
      }
    }
    this.running = false
    if (performance.now() > prepared.deadline && !result.ok && result.kind !== 'invalid') {
      result = { ok: false, kind: 'timeout', message: `no answer within ${timeoutMs} ms` }
    }
    endIo(prepared)
    prepared.deadline = Number.POSITIVE_INFINITY
    return result
  }
}

/**
 * The engine's WebAssembly memory as it was right after its context was set up, and the host-side
 * state that goes with it. `ranges` are the bytes copied back: all of the memory up to the heap's
 * highest used byte and 256 bytes past it (to a whole 16-byte word), except the C stack of a known
 * build (below the stack pointer between calls, what a run left there is never read). Above that,
 * what a run left is free memory the allocator hands out again only as it does any freed memory
 * (zeroed where it must be).
 *
 * The host side: the ids of the host functions the context holds (`quickjs-emscripten` keeps the
 * functions in a map by id, and frees an id when the engine frees its function, which may happen
 * during a run), and the context wrapper's cached handles (one made during a run would point into
 * memory the restore discards).
 */
interface Snapshot {
  memory: WasmMemory
  ranges: { at: number; bytes: Uint8Array }[]
  refs: HostRefs
  nextId: number
  freelist: number[]
  groups: [number, [number, unknown][]][]
  context: Record<string, unknown>
  cached: [string, unknown][]
}

/** `quickjs-emscripten`'s map of host functions by id (its `HostRefMap`). */
interface HostRefs {
  nextId: number
  freelist: number[]
  groups: Map<number, Map<number, unknown>>
}

/** The context wrapper's lazily made handles (see `Snapshot`). */
const CACHED_HANDLES = ['_global', '_BigInt', '_Symbol', '_SymbolIterator', '_SymbolAsyncIterator']

/** Zeros to compare memory with. */
const ZEROS = new Uint8Array(65_536)

/** The index just past the last nonzero byte of `bytes` (0 if all are zero). */
function usedEnd(bytes: Uint8Array): number {
  let end = bytes.length
  while (end > 0) {
    const start = Math.max(0, end - ZEROS.length)
    const chunk = bytes.subarray(start, end)
    if (Buffer.compare(chunk, ZEROS.subarray(0, chunk.length)) !== 0) {
      let i = chunk.length
      while (i > 0 && chunk[i - 1] === 0) i--
      return start + i
    }
    end = start
  }
  return 0
}

/** The snapshot's end is a multiple of this (bytes): the allocator's alignment. */
const SNAPSHOT_ALIGN = 16
/** How far past the heap's last nonzero byte the snapshot goes (bytes, all zero when it is taken). */
const SNAPSHOT_MARGIN = 256

function takeSnapshot(memory: WasmMemory, prepared: Prepared, whole: boolean): Snapshot {
  const all = new Uint8Array(memory.buffer)
  // Past the last nonzero byte: it may be the low byte of a field whose other bytes are zero (the
  // allocator's size of its last block), and the allocator may keep fields that are all zero just
  // past it; a run may write those. So the copy goes `SNAPSHOT_MARGIN` bytes further, to a whole word.
  const used = usedEnd(all) + SNAPSHOT_MARGIN
  const end = Math.min(all.length, Math.ceil(used / SNAPSHOT_ALIGN) * SNAPSHOT_ALIGN)
  const stack = whole ? undefined : stackOfBuild()
  const ranges =
    // The stack's deep end, never reached while setting up, must be zero: the layout is as known.
    stack && stack.top < end && usedEnd(all.subarray(0, stack.top - MIB)) <= stack.top - stack.bytes
      ? [
          { at: 0, bytes: all.slice(0, stack.top - stack.bytes) },
          { at: stack.top, bytes: all.slice(stack.top, end) },
        ]
      : [{ at: 0, bytes: all.slice(0, end) }]
  const runtime = prepared.runtime as unknown as { hostRefs: HostRefs }
  const refs = runtime.hostRefs
  const context = prepared.context as unknown as Record<string, unknown>
  return {
    memory,
    ranges,
    refs,
    nextId: refs.nextId,
    freelist: [...refs.freelist],
    groups: [...refs.groups].map(([id, group]) => [id, [...group]]),
    context,
    cached: CACHED_HANDLES.map((name) => [name, context[name]]),
  }
}

/** Copies the snapshot back (see `Snapshot`); `prepared`'s own run state is reset by `fresh`. */
function restore(snapshot: Snapshot): void {
  const all = new Uint8Array(snapshot.memory.buffer)
  for (const { at, bytes } of snapshot.ranges) all.set(bytes, at)
  const { refs } = snapshot
  refs.nextId = snapshot.nextId
  refs.freelist = [...snapshot.freelist]
  refs.groups = new Map(snapshot.groups.map(([id, group]) => [id, new Map(group)]))
  for (const [name, value] of snapshot.cached) snapshot.context[name] = value
}

/** Resets the host side of a run (the engine's side is the snapshot's) for a run of `timeoutMs` ending at `deadline`. */
function fresh(prepared: Prepared, deadline: number, timeoutMs: number, memoryMb: number): void {
  prepared.deadline = deadline
  prepared.timeoutMs = timeoutMs
  prepared.logs = []
  prepared.bridge = bridgeRun(deadline, memoryMb * MIB)
  delete prepared.modules
  delete prepared.pumpTimers
  delete prepared.deliverFetch
  delete prepared.io
  delete prepared.stopped
}

/** A runtime and context ready for one run. */
interface Prepared {
  runtime: QuickJSRuntime
  context: QuickJSContext
  logs: string[]
  deadline: number
  /** The run's time limit (ms). */
  timeoutMs: number
  stringify: QuickJSHandle
  /** The run driver's `keep` and `start` (adapters/sandbox/prelude/driver.js). */
  keep: QuickJSHandle
  start: QuickJSHandle
  /** Why the driver's `start` stopped before the formula's function answered, when it did. */
  stopped?: RunResult
  /** The prelude's modules, once a run has used them. */
  modules?: QuickJSHandle
  /** The prelude's timer hook (`pumpTimers(fire)`), once the prelude is loaded. */
  pumpTimers?: QuickJSHandle
  /** The prelude's hook settling a `fetch` (`deliverFetch(id, ok, payload)`), once the prelude is loaded. */
  deliverFetch?: QuickJSHandle
  /** The run's requests, when `fetch` is allowed. */
  io?: Io
  /** The run's digests and random bytes, made by the host. */
  bridge: BridgeRun
  /** The prelude's program text (adapters/sandbox/prelude-source.ts). */
  prelude: string
}

/** Requests a run made through `fetch`: at most `MAX_FETCHES` per run, the host making each. */
interface Io {
  origins: string[]
  started: number
  inflight: Map<number, AbortController>
  completed: { id: number; ok: boolean; payload: string }[]
  /** Wakes the run's loop when a request completes. */
  wake: (() => void) | undefined
  ended: boolean
}

/** Requests one run may make. */
const MAX_FETCHES = 50
/** Longest request (its JSON text) formula code may hand the host. */
const MAX_FETCH_REQUEST_CHARS = 2 * EGRESS_MAX_BODY_BYTES + 64 * 1024

/** Lets this run's code use `fetch` towards `origins` (the global is the prelude's, made on first use). */
function allowFetch(prepared: Prepared, origins: string[]): void {
  const { context } = prepared
  prepared.io = { origins, started: 0, inflight: new Map(), completed: [], wake: undefined, ended: false }
  context.defineProp(context.global, 'fetch', {
    configurable: true,
    enumerable: false,
    get: () => context.getProp(loadPrelude(prepared), 'fetch'),
    set: (value) => {
      context.defineProp(context.global, 'fetch', { configurable: true, enumerable: false, value })
    },
  })
}

/** Aborts the run's requests still under way; their answers are dropped. */
function endIo(prepared: Prepared): void {
  endBridge(prepared.bridge)
  const io = prepared.io
  if (!io) return
  io.ended = true
  for (const controller of io.inflight.values()) controller.abort(new EgressError('the run ended'))
  io.inflight.clear()
  io.completed.length = 0
}

/**
 * The host side of `fetch`: `text` is the request as JSON text, made by the prelude. Checks it,
 * starts the request (bounded by the run's remaining time and the body limits) and answers its id.
 */
function startFetch(prepared: Prepared, text: string): number {
  const io = prepared.io
  if (!io) throw new Error(`fetch ${NOT_AVAILABLE}`)
  if (io.started >= MAX_FETCHES) throw new Error(`a run makes at most ${MAX_FETCHES} requests`)
  if (text.length > MAX_FETCH_REQUEST_CHARS)
    throw new Error(`request body is larger than ${EGRESS_MAX_BODY_BYTES} bytes`)
  const raw = JSON.parse(text) as unknown
  if (typeof raw !== 'object' || raw === null) throw new Error('invalid request')
  const { url, method, headers, body } = raw as Record<string, unknown>
  if (typeof url !== 'string' || typeof method !== 'string') throw new Error('invalid request')
  if (typeof headers !== 'object' || headers === null || Array.isArray(headers))
    throw new Error('invalid request')
  const flat: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value !== 'string') throw new Error('invalid request')
    flat[name] = value
  }
  if (body !== undefined && typeof body !== 'string') throw new Error('invalid request')
  const id = ++io.started
  const controller = new AbortController()
  io.inflight.set(id, controller)
  const settleWith = (ok: boolean, payload: string) => {
    if (io.ended) return
    io.inflight.delete(id)
    io.completed.push({ id, ok, payload })
    io.wake?.()
  }
  egressFetch(
    io.origins,
    body === undefined ? { url, method, headers: flat } : { url, method, headers: flat, body },
    {
      timeoutMs: prepared.deadline - performance.now(),
      maxRequestBytes: EGRESS_MAX_BODY_BYTES,
      maxResponseBytes: EGRESS_MAX_BODY_BYTES,
      signal: controller.signal,
    },
  ).then(
    (response) => settleWith(true, JSON.stringify(response)),
    (error: unknown) =>
      settleWith(false, error instanceof EgressError ? error.message : 'the request could not be made'),
  )
  return id
}

function prepare(module: QuickJSWASMModule, memoryMb: number, prelude: string, driver: string): Prepared {
  const runtime = module.newRuntime()
  runtime.setMemoryLimit(memoryMb * MIB)
  runtime.setMaxStackSize(STACK_BYTES)
  const prepared = {
    runtime,
    deadline: Number.POSITIVE_INFINITY,
    timeoutMs: 0,
    logs: [] as string[],
    prelude,
    bridge: bridgeRun(Number.POSITIVE_INFINITY, memoryMb * MIB),
  } as Prepared
  runtime.setInterruptHandler(() => performance.now() > prepared.deadline)
  const context = runtime.newContext()
  prepared.context = context
  // The answer's JSON is made with the engine's own JSON.stringify, taken before any code runs.
  const json = context.getProp(context.global, 'JSON')
  prepared.stringify = context.getProp(json, 'stringify')
  STRINGIFY.set(context, prepared.stringify)
  json.dispose()
  installConsole(prepared)
  installDriver(prepared, driver)
  return prepared
}

/**
 * Sets the context up with the run driver (adapters/sandbox/prelude/driver.js): it removes the
 * globals formula code is not given, makes `fetch` throw the clear error, and defines `require` and
 * the prelude's globals so that they evaluate the prelude (the modules `require` answers) in this
 * context on first use, through the host function `load`; it answers `keep` and `start`, kept
 * here (formula code never sees them), and reports where `start` stopped through `fail`. The
 * prelude gets the host's functions on a `__host` object it removes from the global object before
 * any formula code runs: `refuse` (throws the clear error for a module not offered), `fetch` (starts
 * a request to an allowed origin) and the crypto bridge (`adapters/sandbox/crypto-bridge.ts`:
 * digests, HMACs and random bytes).
 */
function installDriver(prepared: Prepared, driver: string): void {
  const { context } = prepared
  Scope.withScope((scope) => {
    const host = scope.manage(context.newObject())
    const load = scope.manage(context.newFunction('load', () => loadPrelude(prepared).dup()))
    const fail = scope.manage(
      context.newFunction('fail', (stage, thrown) => {
        prepared.stopped = stoppedAt(prepared, context.getString(stage), thrown)
      }),
    )
    context.setProp(host, 'load', load)
    context.setProp(host, 'fail', fail)
    context.setProp(host, 'notAvailable', scope.manage(context.newString(NOT_AVAILABLE)))
    const setup = scope.manage(context.unwrapResult(context.evalCode(driver, 'driver.js')))
    const hooks = scope.manage(context.unwrapResult(context.callFunction(setup, context.undefined, host)))
    prepared.keep = context.getProp(hooks, 'keep')
    prepared.start = context.getProp(hooks, 'start')
  })
}

/**
 * Compiles `code` in its module wrapper (a syntax error is the run's failure) and hands the factory
 * to the driver's `keep`, for `start`. Every run compiles its code afresh, on the memory as the
 * snapshot left it: nothing of a compile (and nothing its code may have run while it was evaluated)
 * outlives the run.
 */
function load(prepared: Prepared, code: string): RunResult | undefined {
  const { context } = prepared
  const scope = new Scope()
  try {
    const factory = unwrap(scope, context, context.evalCode(wrapModule(code), 'formula.js'), 'invalid')
    if (isResult(factory))
      return factory.ok ? factory : { ...factory, message: `SyntaxError: ${factory.message}` }
    const kept = context.callFunction(prepared.keep, context.undefined, factory)
    scope.manage(kept.error ?? kept.value)
  } finally {
    scope.dispose()
  }
  return undefined
}

/** What a run stopped by the driver's `start` at `stage` answers (see adapters/sandbox/prelude/driver.js). */
function stoppedAt(prepared: Prepared, stage: string, thrown: QuickJSHandle | undefined): RunResult {
  const { context } = prepared
  const describeThrown = () =>
    thrown ? describe(context, thrown) : { message: 'the formula threw an error' }
  switch (stage) {
    case 'module':
      return { ok: false, kind: 'invalid', message: 'the formula code must be a module body' }
    case 'load':
      // A module body stopped at the deadline (a top-level loop) ran out of time; it is not invalid.
      if (performance.now() > prepared.deadline)
        return { ok: false, kind: 'timeout', message: `no answer within ${prepared.timeoutMs} ms` }
      return failed('invalid', describeThrown())
    case 'export':
      return {
        ok: false,
        kind: 'invalid',
        message: 'the formula must export a function (module.exports = async function (req) { ... })',
      }
    case 'request':
      return failed('crashed', describeThrown())
    default:
      return failed('thrown', describeThrown())
  }
}

/** Evaluates the prelude in this run's context (once) and answers its exports. */
function loadPrelude(prepared: Prepared): QuickJSHandle {
  if (prepared.modules) return prepared.modules
  const { context } = prepared
  const host = context.newObject()
  const refuse = context.newFunction('refuse', (id) => {
    const name = context.typeof(id) === 'string' ? context.getString(id) : 'that'
    return { error: context.newError(`require(${JSON.stringify(cut(name, 100))}) ${NOT_AVAILABLE}`) }
  })
  const hostFetch = context.newFunction('fetch', (request) => {
    try {
      if (context.typeof(request) !== 'string') throw new Error('invalid request')
      return context.newNumber(startFetch(prepared, guestString(context, request, 'the request')))
    } catch (error) {
      return { error: context.newError(error instanceof Error ? error.message : 'invalid request') }
    }
  })
  context.setProp(host, 'refuse', refuse)
  context.setProp(host, 'fetch', hostFetch)
  refuse.dispose()
  hostFetch.dispose()
  installCryptoBridge(context, host, prepared.bridge)
  context.setProp(context.global, '__host', host)
  host.dispose()
  const modules = context.unwrapResult(context.evalCode(prepared.prelude, 'prelude.js'))
  prepared.modules = modules
  prepared.pumpTimers = context.getProp(modules, 'pumpTimers')
  prepared.deliverFetch = context.getProp(modules, 'deliverFetch')
  return modules
}

/** `console.log` and friends, capturing what a run prints (100 lines of 2000 characters at most). */
function installConsole(prepared: Prepared): void {
  const { context } = prepared
  const consoleObject = context.newObject()
  const log = context.newFunction('log', (...args) => {
    if (prepared.logs.length >= MAX_LOG_LINES) return
    const parts = args.map((arg) => {
      if (context.typeof(arg) === 'string') return cut(context.getString(arg), MAX_LOG_LINE)
      try {
        const dumped: unknown = context.dump(arg)
        return cut(typeof dumped === 'string' ? dumped : String(JSON.stringify(dumped)), MAX_LOG_LINE)
      } catch {
        return '[unprintable]'
      }
    })
    prepared.logs.push(cut(parts.join(' '), MAX_LOG_LINE))
  })
  for (const level of ['log', 'info', 'warn', 'error', 'debug', 'trace'])
    context.setProp(consoleObject, level, log)
  log.dispose()
  context.setProp(context.global, 'console', consoleObject)
  consoleObject.dispose()
}

/** Each context's own `JSON.stringify`, taken before any code ran in it. */
const STRINGIFY = new WeakMap<QuickJSContext, QuickJSHandle>()
/** The longest JSON text of a thrown error's `errors` block that is read. */
const MAX_ERRORS_JSON = 64_000

/** A thrown error's `errors` block (the reactor formulas SDK's errors carry one), cut to the limits. */
function errorsOf(context: QuickJSContext, thrown: QuickJSHandle): ErrorsBlock | undefined {
  const stringify = STRINGIFY.get(context)
  return Scope.withScope((scope) => {
    const errors = scope.manage(context.getProp(thrown, 'errors'))
    if (!stringify || context.typeof(errors) !== 'object') return undefined
    const result = context.callFunction(stringify, context.undefined, errors)
    if (result.error) {
      scope.manage(result.error)
      return undefined
    }
    const value = scope.manage(result.value)
    const text = context.typeof(value) === 'string' ? context.getString(value) : ''
    if (!text || text.length > MAX_ERRORS_JSON) return undefined
    return readErrors(JSON.parse(text), true) ?? undefined
  })
}

/** The message, numeric `status` and `errors` block of a thrown value, read without trusting it. */
function describe(
  context: QuickJSContext,
  thrown: QuickJSHandle,
): { message: string; status?: number; errors?: ErrorsBlock } {
  const type = context.typeof(thrown)
  if (type === 'string') return { message: cut(context.getString(thrown), MAX_MESSAGE) }
  if (type !== 'object' && type !== 'function') return { message: `the formula threw a ${type}` }
  let message = 'the formula threw an error'
  let status: number | undefined
  let errors: ErrorsBlock | undefined
  try {
    Scope.withScope((scope) => {
      const m = scope.manage(context.getProp(thrown, 'message'))
      if (context.typeof(m) === 'string') message = cut(context.getString(m), MAX_MESSAGE)
      const s = scope.manage(context.getProp(thrown, 'status'))
      if (context.typeof(s) === 'number') status = context.getNumber(s)
    })
    errors = errorsOf(context, thrown)
  } catch {
    // A getter that throws leaves the defaults.
  }
  const described: { message: string; status?: number; errors?: ErrorsBlock } = { message }
  if (status !== undefined && Number.isInteger(status)) described.status = status
  if (errors) described.errors = errors
  return described
}

/** A failure of the code, or `crashed` when the engine ran out of memory for it. */
function failed(
  kind: WorkerFailure,
  failure: { message: string; status?: number; errors?: ErrorsBlock },
): RunResult {
  if (failure.message === 'out of memory')
    return { ok: false, kind: 'crashed', message: 'it ran out of memory' }
  return { ok: false, kind, ...failure }
}

/**
 * Takes the value out of a call result (handed to `scope`, which disposes it), or answers the
 * failure it stands for (the error's handle disposed, whatever reading it does).
 */
function unwrap(
  scope: Scope,
  context: QuickJSContext,
  result: ReturnType<QuickJSContext['callFunction']>,
  kind: WorkerFailure,
): QuickJSHandle | RunResult {
  if ('error' in result && result.error) return failure(context, scope.manage(result.error), kind)
  return scope.manage((result as { value: QuickJSHandle }).value)
}

/** The failure a thrown value stands for (its handle is the caller's scope's). */
function failure(context: QuickJSContext, thrown: QuickJSHandle, kind: WorkerFailure): RunResult {
  return failed(kind, describe(context, thrown))
}

const isResult = (value: QuickJSHandle | RunResult): value is RunResult =>
  typeof value === 'object' && value !== null && 'ok' in value

/**
 * Loads and calls the formula. Every handle it makes belongs to one scope disposed when it ends,
 * on every path (a throw at load time, a refused `require`, an interrupted loop, a rejection, an
 * engine failure): a handle left alive would make freeing the runtime abort, and the worker with it.
 */
async function execute(
  prepared: Prepared,
  request: string,
  maxResultChars: number,
  timeoutMs: number,
): Promise<RunResult> {
  const scope = new Scope()
  try {
    return await executeIn(scope, prepared, request, maxResultChars, timeoutMs)
  } finally {
    scope.dispose()
  }
}

async function executeIn(
  scope: Scope,
  prepared: Prepared,
  request: string,
  maxResultChars: number,
  timeoutMs: number,
): Promise<RunResult> {
  const { context } = prepared
  // Load and call, in one call into the engine: the driver runs the module body of the factory
  // `load` gave it, parses the request (so that it is the engine's own object) and calls the
  // exported function (see `installDriver`).
  const requestText = scope.manage(context.newString(request))
  const called = unwrap(
    scope,
    context,
    context.callFunction(prepared.start, context.undefined, requestText),
    'thrown',
  )
  if (prepared.stopped) return prepared.stopped
  if (isResult(called)) return called
  const settled = await settle(scope, prepared, called, timeoutMs)
  if (isResult(settled)) return settled
  // Answer: JSON text made by the engine's JSON.stringify, bounded in size.
  const text = unwrap(
    scope,
    context,
    context.callFunction(prepared.stringify, context.undefined, settled),
    'thrown',
  )
  if (isResult(text)) {
    if (text.ok || text.kind !== 'thrown') return text
    return {
      ok: false,
      kind: 'thrown',
      message: `the formula answered something that is not JSON: ${text.message}`,
    }
  }
  const json = answerText(context, text, maxResultChars)
  if (typeof json !== 'string') return json
  return { ok: true, json, logs: prepared.logs }
}

/**
 * The answer's JSON text (`text` a guest string, else `null`), copied whole and at most
 * `maxResultChars` characters (a longer one is refused before it is copied), or the run's failure.
 */
function answerText(
  context: QuickJSContext,
  text: QuickJSHandle,
  maxResultChars: number,
): string | RunResult {
  if (context.typeof(text) !== 'string') return 'null'
  try {
    return guestString(context, text, "the formula's answer", maxResultChars)
  } catch (error) {
    if (!(error instanceof GuestTextError)) throw error
    return { ok: false, kind: 'thrown', message: error.message }
  }
}

/** Waits `ms` milliseconds (at least 0). */
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)))

/**
 * Runs the engine's jobs until `value` (a promise, or not) settles; answers its value or the failure.
 * While no job is pending, the prelude's timers are run when due (the worker waits for the next one),
 * within the run's time limit: a run left waiting only on timers due past its deadline fails at once
 * as a timeout, and one left with nothing to wait for fails as never settled. Every handle it makes
 * is `scope`'s.
 */
async function settle(
  scope: Scope,
  prepared: Prepared,
  value: QuickJSHandle,
  timeoutMs: number,
): Promise<QuickJSHandle | RunResult> {
  const { context, runtime } = prepared
  for (;;) {
    const state = context.getPromiseState(value)
    if (state.type === 'fulfilled') return state.notAPromise ? value : scope.manage(state.value)
    if (state.type === 'rejected') return failure(context, scope.manage(state.error), 'thrown')
    if (runtime.hasPendingJob()) {
      const jobs = runtime.executePendingJobs()
      if (jobs.error) return failure(context, scope.manage(jobs.error), 'thrown')
      jobs.dispose()
      continue
    }
    const io = prepared.io
    if (io?.completed.length) {
      const delivered = deliverCompleted(prepared, io)
      if (delivered) return delivered
      continue
    }
    const next = prepared.pumpTimers ? pumpTimers(prepared, false) : -1
    if (typeof next !== 'number') return next
    const waiting = io ? io.inflight.size : 0
    if (next < 0 && !waiting) {
      return {
        ok: false,
        kind: 'thrown',
        message: 'the formula did not finish: its promise never settled (nothing it waits for is pending)',
      }
    }
    const left = prepared.deadline - performance.now()
    const wait = next < 0 ? Number.POSITIVE_INFINITY : next - Date.now()
    if (left <= 0 || (wait > left && !waiting))
      return { ok: false, kind: 'timeout', message: `no answer within ${timeoutMs} ms` }
    if (wait > 0) await idle(io, Math.min(wait, left))
    if (performance.now() > prepared.deadline) continue
    if (next >= 0 && Date.now() >= next) {
      const fired = pumpTimers(prepared, true)
      if (typeof fired !== 'number') return fired
    }
  }
}

/** Waits `ms`, or less when one of the run's requests completes. */
function idle(io: Io | undefined, ms: number): Promise<void> {
  if (!io?.inflight.size) return sleep(ms)
  return new Promise<void>((resolve) => {
    const timer = setTimeout(done, Math.max(0, ms))
    function done() {
      clearTimeout(timer)
      io!.wake = undefined
      resolve()
    }
    io.wake = done
  })
}

/** Settles the completed requests' promises in the engine; answers a failure of the engine's hook, if any. */
function deliverCompleted(prepared: Prepared, io: Io): RunResult | undefined {
  const { context } = prepared
  for (const { id, ok, payload } of io.completed.splice(0)) {
    // Each call's handles are freed when it returns, not only when the run ends.
    const failed = Scope.withScope((scope) => {
      const result = unwrap(
        scope,
        context,
        context.callFunction(
          prepared.deliverFetch!,
          context.undefined,
          scope.manage(context.newNumber(id)),
          ok ? context.true : context.false,
          scope.manage(context.newString(payload)),
        ),
        'thrown',
      )
      return isResult(result) ? result : undefined
    })
    if (failed) return failed
  }
  return undefined
}

/** Calls the prelude's timer hook: the next timer's due time (-1: none), or the failure of the timer it ran. */
function pumpTimers(prepared: Prepared, fire: boolean): number | RunResult {
  const { context } = prepared
  return Scope.withScope((scope) => {
    const result = unwrap(
      scope,
      context,
      context.callFunction(prepared.pumpTimers!, context.undefined, fire ? context.true : context.false),
      'thrown',
    )
    if (isResult(result)) return result
    return context.typeof(result) === 'number' ? context.getNumber(result) : -1
  })
}

/** Compiles `code` as a formula module without running it: null when it compiles, else the message. */
export function compileIn(module: QuickJSWASMModule, code: string): string | null {
  const runtime = module.newRuntime()
  runtime.setMemoryLimit(16 * MIB)
  runtime.setMaxStackSize(STACK_BYTES)
  const deadline = performance.now() + 1000
  runtime.setInterruptHandler(() => performance.now() > deadline)
  const context = runtime.newContext()
  try {
    for (const source of [wrapModule(code), wrapDeclaration(code)]) {
      const result = context.evalCode(source, 'formula.js', { compileOnly: true })
      if (result.error) {
        const failure = describe(context, result.error)
        result.error.dispose()
        return `SyntaxError: ${failure.message}`
      }
      result.value.dispose()
    }
    return null
  } finally {
    context.dispose()
    runtime.dispose()
  }
}

/** A WebAssembly engine for compile checks only (no code is ever run in it), memory capped at 48 MiB. */
export async function loadCompiler(compiled?: object): Promise<QuickJSWASMModule> {
  return (await loadModule(48, compiled)).module
}

export type { WorkerMessage }
