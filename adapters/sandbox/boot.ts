/**
 * The source of the script that prepares each formula's `vm` context, run inside that context before
 * any formula code. It evaluates to a function `(maxResultChars) => controller`.
 *
 * Everything the formula can reach is made here, inside its own realm: no object of the sandbox
 * process's realm is ever handed to formula code (such an object would lead, through its
 * `constructor`, to that realm's `Function` and so to `process` and `require`). The controller talks
 * to the sandbox process in strings only, with intrinsics captured before the formula could replace
 * them. It also removes what could allocate memory outside the V8 heap (array buffers, typed
 * arrays, WebAssembly), which the heap limit would not bound, and `FinalizationRegistry`, whose
 * callbacks would run outside a formula's time.
 *
 * Controller (every answer is a string):
 * - `load(factory)`: runs the compiled module body; '' when it exported a function, else `I<message>`.
 * - `start(requestJson)`: calls the exported function with the parsed request.
 * - `poll()`: '' while pending, `O<json>` on success, `T<status>|<message>` when it threw.
 * - `logs()`: what `console` printed during the last run, as a JSON array of strings.
 */
export const BOOT_SOURCE = `(function (maxResultChars) {
  'use strict';
  const g = globalThis;
  const removed = ['ArrayBuffer', 'SharedArrayBuffer', 'DataView', 'Atomics', 'WebAssembly',
    'FinalizationRegistry', 'Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array',
    'Int32Array', 'Uint32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array'];
  for (let i = 0; i < removed.length; i++) delete g[removed[i]];

  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const apply = Reflect.apply;
  const PromiseCtor = Promise;
  const then = Promise.prototype.then;
  const resolve = Promise.resolve;
  const toText = String;
  const isInteger = Number.isInteger;
  const slice = String.prototype.slice;
  const freeze = Object.freeze;
  const define = Object.defineProperty;

  const MAX_LOGS = 100;
  const MAX_LINE = 2000;
  let logs = [];
  const show = function (value) {
    if (typeof value === 'string') return value;
    try {
      const json = stringify(value);
      return typeof json === 'string' ? json : toText(value);
    } catch (e) {
      try { return toText(value); } catch (e2) { return '[unprintable]'; }
    }
  };
  const cut = function (text, max) {
    return text.length > max ? apply(slice, text, [0, max]) : text;
  };
  const log = function () {
    if (logs.length >= MAX_LOGS) return;
    let line = '';
    for (let i = 0; i < arguments.length; i++) line += (i ? ' ' : '') + show(arguments[i]);
    logs[logs.length] = cut(line, MAX_LINE);
  };
  const console = freeze({ log: log, info: log, warn: log, error: log, debug: log, trace: log });
  define(g, 'console', { value: console, writable: true, configurable: true, enumerable: false });
  define(g, 'queueMicrotask', {
    value: function queueMicrotask(task) { apply(then, apply(resolve, PromiseCtor, [undefined]), [task]); },
    writable: true, configurable: true, enumerable: false,
  });
  const require = function require(id) {
    throw new Error('require(' + show(id) + ') is not available: reactor formulas run without modules, I/O or timers');
  };

  const describe = function (error) {
    try {
      if (error !== null && (typeof error === 'object' || typeof error === 'function')) {
        const message = error.message;
        return cut(typeof message === 'string' ? message : toText(error), 1000);
      }
      return cut(toText(error), 1000);
    } catch (e) {
      return 'the formula threw a value that cannot be described';
    }
  };
  const statusOf = function (error) {
    try {
      if (error !== null && (typeof error === 'object' || typeof error === 'function')) {
        const status = error.status;
        if (typeof status === 'number' && isInteger(status)) return status;
      }
    } catch (e) {}
    return 0;
  };

  let fn = null;
  let run = 0;
  let state = '';
  return freeze({
    load: function (factory) {
      const module = { exports: {} };
      try {
        apply(factory, module.exports, [module.exports, require, module, '/formula.js', '/']);
      } catch (error) {
        return 'Ithe code threw while loading: ' + describe(error);
      }
      const exported = module.exports;
      if (typeof exported !== 'function') {
        return 'Ithe code must export a function: module.exports = async function (req) { ... }';
      }
      fn = exported;
      return '';
    },
    start: function (requestJson) {
      const mine = ++run;
      state = '';
      logs = [];
      const ok = function (value) {
        if (mine !== run) return;
        try {
          const json = value === undefined ? 'null' : stringify(value);
          if (typeof json !== 'string') state = 'T500|the formula answered something that is not JSON';
          else if (json.length > maxResultChars) state = 'T500|the formula answered more than ' + maxResultChars + ' characters';
          else state = 'O' + json;
        } catch (error) {
          state = 'T500|the formula answered something that is not JSON: ' + describe(error);
        }
      };
      const fail = function (error) {
        if (mine === run) state = 'T' + statusOf(error) + '|' + describe(error);
      };
      try {
        const answer = apply(fn, undefined, [parse(requestJson)]);
        apply(then, apply(resolve, PromiseCtor, [answer]), [ok, fail]);
      } catch (error) {
        fail(error);
      }
    },
    poll: function () { return state; },
    logs: function () {
      try { return stringify(logs); } catch (e) { return '[]'; }
    },
  });
})`
