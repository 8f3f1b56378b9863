import { sandboxRunner } from '../adapters/sandbox/index.js'
import { createService, systemClock } from '../entry/index.js'
import { memoryStore } from '../adapters/memory/index.js'

const nice = Number(process.argv[2] ?? 10)
const runner = sandboxRunner({ nice, poolSize: 2 })
const service = createService({ store: memoryStore(), clock: systemClock, runner })
const tenant = async (name: string) => {
  const t = await service.admin.createTenant({ name })
  const app = async (type: 'private' | 'management', permissions: any[]) =>
    (await service.admin.createApplication({ tenantId: t.id, name: type, type, permissions })).key
  return { admin: service.connect(await app('management', ['reactor:create'])), client: service.connect(await app('private', ['token:use', 'token:create', 'token:read'] as any)) }
}
const a = await tenant('a')
const b = await tenant('b')
const formula = await a.admin.reactorFormulas.create({ name: 'busy', type: 'private', code: 'module.exports = async () => { const t = Date.now(); while (Date.now() - t < 100) {} return { raw: 1 } }', configuration: [], request_parameters: [] } as any)
const reactor = await a.admin.reactors.create({ name: 'busy', formula_id: formula.id, configuration: {} } as any)
const tok = await b.client.tokens.create({ type: 'token', data: 'x' } as any)
const sample = async (ms: number) => {
  const out: number[] = []
  const end = performance.now() + ms
  while (performance.now() < end) {
    const s = performance.now()
    await new Promise((r) => setTimeout(r, 1))
    await b.client.tokens.get(tok.id)
    out.push(performance.now() - s - 1)
  }
  out.sort((x, y) => x - y)
  return { n: out.length, p50: out[Math.floor(out.length / 2)]!.toFixed(2), p99: out[Math.floor(out.length * 0.99)]!.toFixed(2), max: out[out.length - 1]!.toFixed(2) }
}
await a.client.reactors.react(reactor.id, { args: {} }).catch(() => {})
console.log('alone', await sample(3000))
const stop = { now: false }
const loops = Array.from({ length: 4 }, async () => { while (!stop.now) await a.client.reactors.react(reactor.id, { args: {} }).catch(() => {}) })
await new Promise((r) => setTimeout(r, 300))
console.log('under', await sample(3000))
stop.now = true
await Promise.all(loops)
await runner.close()
process.exit(0)
