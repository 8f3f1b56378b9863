/**
 * The run driver: bundled on its own (adapters/sandbox/prelude-source.ts) and evaluated once in each
 * engine's context as the engine sets it up, before its memory is snapshotted (see
 * adapters/sandbox/engine.ts), so every run finds it as it was made, whatever the previous run did.
 *
 * `setup(host)` takes the host's functions, sets the global object up for formula code, and answers
 * `keep` and `start`, which the engine keeps (formula code never sees them): one call into the
 * engine loads a formula's module and calls its function, where the host would otherwise make a dozen.
 */

/** Globals of the engine that formula code is not given. */
const REMOVED_GLOBALS = ['SharedArrayBuffer', 'Atomics', 'WebAssembly']
/** Globals Node has that formulas do not: present, so that calling one says clearly why it fails. */
const REFUSED_GLOBALS = ['fetch']
/** Globals the prelude defines, on first use. */
const PRELUDE_GLOBALS = [
  'TextEncoder',
  'TextDecoder',
  'Buffer',
  'URL',
  'URLSearchParams',
  'setTimeout',
  'clearTimeout',
  'setInterval',
  'clearInterval',
  'setImmediate',
  'clearImmediate',
]

/**
 * @typedef {object} Host
 * @property {() => Record<string, any>} load Evaluates the prelude in this run's context (once) and answers its exports.
 * @property {(stage: string, thrown?: unknown) => void} fail Records why `start` stopped: the host reads it once `start` returns.
 * @property {string} notAvailable The end of the error message of a refused global.
 */

/**
 * Removes `REMOVED_GLOBALS`, makes each of `REFUSED_GLOBALS` throw the clear error, defines `require`
 * and the globals of `PRELUDE_GLOBALS` so that they evaluate the prelude in this context on first use,
 * and answers `keep` and `start`.
 * @param {Host} host
 */
export default function setup(host) {
  const load = host.load
  const fail = host.fail
  const parse = JSON.parse
  /** The module factory `keep` was given, for the next `start`. */
  let kept
  const global = /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (globalThis))
  for (const name of REMOVED_GLOBALS) delete global[name]
  for (const name of REFUSED_GLOBALS) {
    const message = `${name} ${host.notAvailable}`
    function refused() {
      throw new Error(message)
    }
    Object.defineProperty(refused, 'name', { value: name })
    global[name] = refused
  }
  for (const name of PRELUDE_GLOBALS) {
    Object.defineProperty(globalThis, name, {
      configurable: true,
      enumerable: false,
      get: () => load()[name],
      set(value) {
        load()
        global[name] = value
      },
    })
  }
  /** @param {unknown} id */
  function require(id) {
    const real = load().require
    return real(id)
  }

  /**
   * Keeps `factory` (what evaluating the formula's code in its module wrapper answered) for the
   * next `start`.
   * @param {unknown} factory
   */
  function keep(factory) {
    kept = factory
  }

  /**
   * Loads the formula's module from the factory `keep` was given (its code wrapped as Node wraps a
   * CommonJS module) and calls the function it exports with the request (`requestText`, JSON made by the host, parsed here
   * so that it is the engine's own object). Answers what the function returned (a promise, most
   * often: the host waits for it). When it stops before that, it tells `host.fail` at which stage and
   * what was thrown, and answers nothing:
   * - `module`: `factory` is not a function (the code closed its wrapper early);
   * - `load`: the module body threw;
   * - `export`: the module exports no function;
   * - `request`: the request could not be parsed;
   * - `call`: the function threw before answering a promise.
   * Only what the module body and the function do runs formula code; a run stopped at its deadline
   * never reaches `host.fail` (the engine's interrupt can't be caught).
   * @param {string} requestText
   */
  function start(requestText) {
    const factory = kept
    kept = undefined
    if (typeof factory !== 'function') return fail('module')
    const exports = {}
    const module = { exports: exports }
    let main
    try {
      factory(exports, require, module, '/formula.js', '/')
      main = module.exports
    } catch (thrown) {
      return fail('load', thrown)
    }
    if (typeof main !== 'function') return fail('export')
    let request
    try {
      request = parse(requestText)
    } catch (thrown) {
      return fail('request', thrown)
    }
    try {
      return main(request)
    } catch (thrown) {
      return fail('call', thrown)
    }
  }
  return { keep: keep, start: start }
}
