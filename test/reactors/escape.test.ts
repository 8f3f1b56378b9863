import { createServer, type Server } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { failure, formulaBody, sharedRunner, world } from '../formulas/setup.js'

/**
 * Attacks on the formula sandbox, written as a hostile tenant would. Each probe tries to reach an
 * object of the host's realm and, with whatever it reached, to open a socket to a loopback listener
 * this test owns. The listener must see no connection, and the host must go on serving.
 */
const runner = sharedRunner()
let listener: Server
let port = 0
let connections = 0
beforeAll(async () => {
  listener = createServer((socket) => {
    connections++
    socket.destroy()
  })
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve))
  port = (listener.address() as { port: number }).port
})
afterAll(async () => {
  await runner.close()
  await new Promise((resolve) => listener.close(resolve))
})

/**
 * A formula that gets a candidate with `reach` (an async function body) and, if it is anything,
 * tries every way a Node object offers to connect to the listener. Answers what it reached.
 */
const probe = (reach: string) => `module.exports = async function (req) {
  const connect = (x) => {
    const tries = [
      () => x.mainModule.require('net').connect(${port}, '127.0.0.1'),
      () => x.getBuiltinModule('net').connect(${port}, '127.0.0.1'),
      () => x('net').connect(${port}, '127.0.0.1'),
      () => x.binding('tcp_wrap'),
      () => x.fetch('http://127.0.0.1:${port}/'),
    ]
    for (const t of tries) { try { t() } catch (e) {} }
  }
  let reached
  try { reached = await (async () => { ${reach} })() } catch (e) { reached = undefined }
  if (reached !== undefined && reached !== null) connect(reached)
  try { await fetch('http://127.0.0.1:${port}/') } catch (e) {}
  try { require('net').connect(${port}, '127.0.0.1') } catch (e) {}
  // What was reached: its type, and whether it is Node's process (a pid, versions.node, binding).
  const nodeProcess = (x) => {
    try {
      return typeof x.pid === 'number' || typeof (x.versions && x.versions.node) === 'string' || typeof x.binding === 'function'
    } catch (e) { return true }
  }
  return { raw: reached === undefined || reached === null ? 'nothing' : { type: typeof reached, nodeProcess: nodeProcess(reached) } }
}`

const PROBES: [string, string][] = [
  [
    "import()'s error constructor",
    "try { await import('x') } catch (e) { return e.constructor.constructor('return process')() }",
  ],
  [
    'eval("import()")\'s error constructor',
    "try { await eval(\"import('x')\") } catch (e) { return e.constructor.constructor('return process')() }",
  ],
  [
    'new Function("return import()")\'s error constructor',
    "try { await new Function(\"return import('x')\")() } catch (e) { return e.constructor.constructor('return process')() }",
  ],
  [
    "a stack overflow's error constructor",
    "try { const f = () => f(); f() } catch (e) { return e.constructor.constructor('return process')() }",
  ],
  ["this's constructor", "return this.constructor.constructor('return process')()"],
  ["req's constructor", "return req.constructor.constructor('return process')()"],
  ["args' constructor", "return req.args.constructor.constructor('return process')()"],
  ["console's constructor", "return console.log.constructor('return process')()"],
  ["require's constructor", "return require.constructor('return process')()"],
  ["module's constructor", "return module.constructor.constructor('return process')()"],
  [
    'Error.prepareStackTrace call sites (getThis)',
    `Error.prepareStackTrace = (e, frames) => frames.map((f) => f.getThis && f.getThis()).find((t) => t && t.process)
     const found = new Error().stack; Error.prepareStackTrace = undefined; return found && found.process`,
  ],
  [
    'Error.prepareStackTrace call sites (getFunction)',
    `Error.prepareStackTrace = (e, frames) => frames.map((f) => f.getFunction && f.getFunction()).find(Boolean)
     const found = new Error().stack; Error.prepareStackTrace = undefined
     return typeof found === 'function' ? found.constructor('return process')() : undefined`,
  ],
  [
    'a Promise species that captures resolvers',
    `let caught
     class Spy extends Promise { constructor(executor) { super((res, rej) => { caught = res; executor(res, rej) }) } }
     Promise.prototype.constructor = Spy
     Object.defineProperty(Promise, Symbol.species, { get: () => Spy })
     await (async () => 1)().then(() => 2)
     return caught && caught.constructor.constructor('return process')()`,
  ],
  [
    'globalThis.process / require / fetch / WebAssembly / SharedArrayBuffer',
    `for (const n of ['process', 'require', 'WebAssembly', 'SharedArrayBuffer']) if (typeof globalThis[n] !== 'undefined' && n !== 'require') return globalThis[n]
     try { return await globalThis.fetch('http://127.0.0.1:${port}/') } catch (e) { return undefined }`,
  ],
  ['globalThis.constructor', "return globalThis.constructor.constructor('return process')()"],
  ["Buffer's constructor", "return Buffer.from('x').constructor.constructor('return process')()"],
  ["URL's constructor", "return new URL('https://h.example').constructor.constructor('return process')()"],
  [
    "a timer callback's this and arguments",
    `return await new Promise((resolve) => setTimeout(function () { resolve((this && this.process) || arguments.length || setTimeout.constructor('return process')()) }, 1))`,
  ],
  ['eval("process")', "return eval('process')"],
  ['an async function constructor', "return (async () => {}).constructor('return process')()"],
]

describe('formula code reaches no object of the host and opens no socket', () => {
  it('control: the probe does connect when it is handed the host process', async () => {
    const before = connections
    const module = { exports: undefined as unknown as (req: unknown) => Promise<unknown> }
    new Function('module', 'require', 'fetch', probe('return process'))(
      module,
      () => ({}),
      async () => {},
    )
    // The probe tells the host's process when it holds it.
    expect(await module.exports({ args: {} })).toEqual({ raw: { type: 'object', nodeProcess: true } })
    for (let i = 0; i < 50 && connections === before; i++) await new Promise((r) => setTimeout(r, 10))
    expect(connections).toBeGreaterThan(before)
    connections = before
  })

  it.each(PROBES)('%s', async (_, reach) => {
    const w = await world({ runner: runner.get(), reactorTimeoutMs: 2000 })
    const make = async (code: string) => {
      const formula = await w.a.admin.reactorFormulas.create(
        formulaBody({ code, configuration: [], request_parameters: [] }),
      )
      return w.a.admin.reactors.create({ name: 'r', formula_id: formula.id })
    }
    const bad = await make(probe(reach))
    const answer = await w.a.client.reactors.react(bad.id, {}).catch((e: unknown) => e)
    // Whatever the probe answers, it reached nothing of the host and connected nowhere.
    if (!(answer instanceof Error)) {
      const raw = (answer as { raw: unknown }).raw
      if (raw !== 'nothing')
        expect(raw).toEqual({ type: expect.stringMatching(/^(object|function|string)$/), nodeProcess: false })
    }
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(connections).toBe(0)
    const good = await make('module.exports = async (req) => ({ raw: req.args })')
    expect(await w.a.client.reactors.react(good.id, { args: { ok: 1 } })).toEqual({
      raw: { ok: 1 },
      tokens: {},
    })
  })

  it('none of the host globals exists for formula code', async () => {
    const w = await world({ runner: runner.get() })
    const code = `module.exports = async () => ({ raw: ['process', 'WebAssembly', 'SharedArrayBuffer', 'Atomics', 'global', '__vitest_worker__', 'hostSecret'].filter((n) => typeof globalThis[n] !== 'undefined') })`
    ;(globalThis as { hostSecret?: string }).hostSecret = 'the host secret'
    const formula = await w.a.admin.reactorFormulas.create(
      formulaBody({ code, configuration: [], request_parameters: [] }),
    )
    const reactor = await w.a.admin.reactors.create({ name: 'r', formula_id: formula.id })
    expect((await w.a.client.reactors.react(reactor.id, {})).raw).toEqual([])
    delete (globalThis as { hostSecret?: string }).hostSecret
  })

  it.each([
    ['require', 'require("fs")', 'require("fs") is not available'],
    ['fetch', 'await fetch("https://example.com")', 'fetch is not available'],
  ])('%s answers a clear error', async (_, body, message) => {
    const w = await world({ runner: runner.get() })
    const code = `module.exports = async () => { ${body} }`
    const formula = await w.a.admin.reactorFormulas.create(
      formulaBody({ code, configuration: [], request_parameters: [] }),
    )
    const reactor = await w.a.admin.reactors.create({ name: 'r', formula_id: formula.id })
    const error = await failure(w.a.client.reactors.react(reactor.id, {}))
    expect({ status: error.status, message: error.message }).toEqual({
      status: 500,
      message: expect.stringContaining(message),
    })
  })
})
