import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import RELEASE_SYNC from '@jitl/quickjs-wasmfile-release-sync'
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSSyncVariant,
  type QuickJSWASMModule,
} from 'quickjs-emscripten-core'
import { allowFetch, endIo } from './bridges.js'
import { load, prepare, STACK_BYTES, wrapDeclaration, wrapModule } from './context.js'
import type { WorkerMessage } from './messages.js'
import { driverSource, preludeSource } from './prelude-source.js'
import { fresh, type HostFetch, MIB, type Prepared } from './prepared.js'
import { execute } from './run.js'
import { restore, type Snapshot, takeSnapshot, type WasmMemory } from './snapshot.js'
import { describe, type RunResult } from './thrown.js'

const PAGE = 65_536

/** What the WebAssembly memory holds besides the formula's heap: the engine's data and stack. */
const HEADROOM_MB = 32

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

  /**
   * Runs `code` with `request` (JSON text), its `fetch` (when given) made by `fetch` outside the
   * engine; never rejects.
   */
  async run(code: string, request: string, timeoutMs: number, fetch?: HostFetch): Promise<RunResult> {
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
        if (fetch) allowFetch(prepared, fetch)
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

export type { RunResult, WorkerMessage }
