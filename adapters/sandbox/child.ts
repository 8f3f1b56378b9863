import { BOOT_SOURCE } from './boot.js'

/** The CommonJS parameters a formula's module body is compiled with (Node's module wrapper). */
export const MODULE_PARAMS = ['exports', 'require', 'module', '__filename', '__dirname']

/**
 * The sandbox process's program (run with `node -e`), plain CommonJS. It receives batches over the
 * IPC channel — `{ b, reset?, code?: { [hash]: code }, runs: [[isolationKey, hash, requestJson]] }` —
 * and runs them one after the other, synchronously: each formula context uses
 * `microtaskMode: 'afterEvaluate'` and formulas have no timers or I/O, so a run's promise chain is
 * finished (or never will be) once its context's microtasks have been drained. It answers
 * `{ b, r: [[kind, text, extra]], done? }`, sending what it has every 5 ms of a long batch so the
 * host can tell which run hangs. kind `O`: text is the answer's JSON, extra the logs' JSON;
 * `I`: the code can't be loaded; `T`: it threw (extra: its numeric `status`, or 0).
 *
 * A context is kept per (isolation key, code), most recently used first, and reused: its module
 * state lives on between runs. The process sends `{ ready: 1 }` once it can take work and exits
 * when the host goes away.
 */
export const CHILD_SOURCE = `'use strict';
const BOOT = ${JSON.stringify(BOOT_SOURCE)};
const PARAMS = ${JSON.stringify(MODULE_PARAMS)};
${String.raw`
const vm = require('node:vm');
const config = JSON.parse(process.argv[1]);
const bootScript = new vm.Script(BOOT, { filename: 'tokenvault-sandbox.js' });
const drain = new vm.Script('0', { filename: 'tokenvault-drain.js' });
const codes = new Map();
const loaded = new Map();
const NEVER = 'the formula did not finish: its promise never settled (formulas have no timers or I/O)';

function message(error) {
  try {
    return error && typeof error.message === 'string' ? error.message : String(error);
  } catch (e) {
    return 'unknown error';
  }
}

function entryFor(key, hash) {
  const id = key + '\n' + hash;
  const found = loaded.get(id);
  if (found !== undefined) {
    loaded.delete(id);
    loaded.set(id, found);
    return found;
  }
  const code = codes.get(hash);
  if (code === undefined) return 'Ithe sandbox does not hold the formula code';
  const context = vm.createContext(Object.create(null), {
    name: 'reactor formula',
    codeGeneration: { strings: true, wasm: false },
    microtaskMode: 'afterEvaluate',
  });
  const controller = bootScript.runInContext(context)(config.maxResultChars);
  let factory;
  try {
    factory = vm.compileFunction(code, PARAMS, { parsingContext: context, filename: 'formula.js' });
  } catch (error) {
    return 'I' + message(error);
  }
  const status = controller.load(factory);
  drain.runInContext(context);
  if (status !== '') return typeof status === 'string' ? status : 'Ithe code could not be loaded';
  const entry = { context: context, controller: controller };
  loaded.set(id, entry);
  if (loaded.size > config.maxContexts) loaded.delete(loaded.keys().next().value);
  return entry;
}

function execute(key, hash, request) {
  try {
    const entry = entryFor(key, hash);
    if (typeof entry === 'string') return ['I', entry.slice(1), 0];
    entry.controller.start(request);
    drain.runInContext(entry.context);
    const out = entry.controller.poll();
    const logs = entry.controller.logs();
    if (typeof out !== 'string') return ['T', 'the sandbox lost the answer', 500];
    if (out === '') return ['T', NEVER, 500];
    if (out[0] === 'O') return ['O', out.slice(1), typeof logs === 'string' ? logs : '[]'];
    const bar = out.indexOf('|');
    return ['T', out.slice(bar + 1), Number(out.slice(1, bar)) || 0];
  } catch (error) {
    return ['T', 'the sandbox failed: ' + message(error), 500];
  }
}

process.on('message', (batch) => {
  if (batch.reset) codes.clear();
  if (batch.code) for (const hash of Object.keys(batch.code)) codes.set(hash, batch.code[hash]);
  let results = [];
  let flushed = performance.now();
  const runs = batch.runs;
  for (let i = 0; i < runs.length; i++) {
    results.push(execute(runs[i][0], runs[i][1], runs[i][2]));
    const now = performance.now();
    if (now - flushed > 5 && i < runs.length - 1) {
      process.send({ b: batch.b, r: results });
      results = [];
      flushed = now;
    }
  }
  process.send({ b: batch.b, r: results, done: 1 });
});
process.on('disconnect', () => process.exit(0));
process.send({ ready: 1 });
`}`
