import { type QuickJSHandle, type QuickJSWASMModule, Scope } from 'quickjs-emscripten-core'
import { installConsole, loadPrelude, NOT_AVAILABLE } from './bridges.js'
import { bridgeRun } from './crypto-bridge.js'
import { MIB, type Prepared } from './prepared.js'
import { describe, failed, isResult, type RunResult, unwrap } from './thrown.js'

/**
 * The engine's runtime and context, set up once per engine (before its snapshot is taken): the
 * captured `console`, the run driver, the engine's own `JSON.stringify`; and the loading of a
 * formula's code into it for one run.
 */

/** The engine's own C stack limit for a run (deep recursion ends in a `RangeError`-like error). */
export const STACK_BYTES = 512 * 1024

const PARAMS = 'exports, require, module, __filename, __dirname'

/** The module wrapper around a formula's code, as Node wraps a CommonJS module (line 1 stays line 1). */
export const wrapModule = (code: string): string => `(function (${PARAMS}) {${code}\n})`

/**
 * A second wrapper used only by the compile check: code written to close the first wrapper early
 * (`}); ... (function () {`) does not parse in this one. (Code that still managed to close both runs
 * only at load time in its own fresh context, which gives it nothing a module body lacks.)
 */
export const wrapDeclaration = (code: string): string => `function formula(${PARAMS}) {${code}\n}`

export function prepare(
  module: QuickJSWASMModule,
  memoryMb: number,
  prelude: string,
  driver: string,
): Prepared {
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
export function load(prepared: Prepared, code: string): RunResult | undefined {
  const { context } = prepared
  const scope = new Scope()
  try {
    const factory = unwrap(scope, prepared, context.evalCode(wrapModule(code), 'formula.js'), 'invalid')
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
    thrown ? describe(context, thrown, prepared.stringify) : { message: 'the formula threw an error' }
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
