/**
 * Two processes delivering one store's outbox (a file store on one host, a PostgreSQL database),
 * each a `deliverer-child.ts`: each delivery is attempted by one process at a time (its claim, a
 * lease of 30 s), so between them every event reaches the receiver once; and when one is SIGKILLed
 * mid-delivery, the other delivers what it held once the claims end (real time: about 30 s).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { expect } from 'vitest'
import { createService, systemClock } from '../../entry/index.js'
import type { Store } from '../../src/store/index.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const CHILD = fileURLToPath(new URL('./deliverer-child.ts', import.meta.url))

/** A receiver on loopback that counts the deliveries it answered 200, by event id. */
function receiver() {
  const answered = new Map<string, number>()
  const held: { process: string; id: string; res: ServerResponse }[] = []
  const state = { mode: 'gate' as 'gate' | 'hang-a' | 'ok', hung: 0 }
  const answer = (id: string, res: ServerResponse) => {
    res.on('finish', () => answered.set(id, (answered.get(id) ?? 0) + 1))
    res.end()
  }
  const server = createServer(async (req: IncomingMessage, res) => {
    let body = ''
    for await (const chunk of req) body += chunk
    const id = (JSON.parse(body) as { event: { id: string } }).event.id
    const from = String(req.headers['x-process'])
    if (state.mode === 'hang-a' && from === 'a') {
      state.hung++
      return
    }
    if (state.mode !== 'gate') return answer(id, res)
    held.push({ process: from, id, res })
    // Both processes have an attempt under way at once: from now on every attempt is answered.
    if (new Set(held.map((h) => h.process)).size === 2) {
      state.mode = 'ok'
      for (const h of held.splice(0)) answer(h.id, h.res)
    }
  })
  return { server, answered, state }
}

/** Starts a delivering child; answers it with a way to wait for a line and to send one. */
function deliverer(args: string[], env: Record<string, string>) {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  })
  let out = ''
  let err = ''
  child.stderr!.on('data', (c: Buffer) => {
    err += c.toString()
  })
  child.stdout!.on('data', (c: Buffer) => {
    out += c.toString()
  })
  const saw = async (text: string) => {
    for (const end = Date.now() + 60_000; !out.includes(text); ) {
      if (child.exitCode !== null || Date.now() > end) throw new Error(`no "${text}" from the child: ${err}`)
      await new Promise((r) => setTimeout(r, 20))
    }
  }
  return { child, saw, send: (line: string) => child.stdin!.write(`${line}\n`) }
}

/** Polls `done` every 50 ms for up to `ms` (the deliveries depend on child processes' speed). */
async function until(done: () => boolean | Promise<boolean>, ms: number, what: string) {
  for (const end = Date.now() + ms; !(await done()); ) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** A tenant with one webhook on `origin` for `token.created`, and a key that creates tokens. */
async function tenantWithHook(service: ReturnType<typeof createService>, origin: string) {
  const tenant = await service.admin.createTenant({ name: 'two-processes' })
  const management = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'm',
    type: 'management',
    permissions: ['webhook:create'],
  })
  const writer = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'w',
    type: 'private',
    permissions: ['token:create'],
  })
  await service
    .connect(management.key)
    .webhooks.create({ name: 'h', url: `${origin}/in`, events: ['token.created'] })
  const tokens = service.connect(writer.key).tokens
  const create = async (n: number) => {
    for (let i = 0; i < n; i++) await tokens.create({ type: 'token', data: `d${i}` })
  }
  return { tenantId: tenant.id, create }
}

/**
 * Phase 1: 40 pending deliveries, two processes delivering at once (the receiver holds its answers
 * until both have an attempt under way): each event answered once. Phase 2: 6 more, taken by
 * process a, whose receiver never answers it; a is SIGKILLed; b delivers all 6 once their claims
 * end, each answered once, each with one recorded attempt.
 */
export async function twoProcessesDeliverOnce(
  spec: string,
  open: () => Promise<Store>,
  env: Record<string, string> = {},
): Promise<void> {
  const { server, answered, state } = receiver()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const masterKey = randomBytes(32)
  const clock = systemClock
  const service = createService({
    store: await open(),
    clock,
    masterKey,
    runner: null,
    egress: [origin],
    webhookDelivery: 'manual',
  })
  const { tenantId, create } = await tenantWithHook(service, origin)
  const delivered = async () =>
    (await service.admin.webhooks.deliveries(tenantId, { limit: 100 })).filter((d) => d.state === 'delivered')
  const args = (name: string) => [spec, masterKey.toString('base64'), origin, name]
  const a = deliverer(args('a'), env)
  const b = deliverer(args('b'), env)
  try {
    await create(40)
    await Promise.all([a.saw('ready'), b.saw('ready')])
    a.send('go')
    b.send('go')
    await until(async () => (await delivered()).length === 40, 90_000, '40 deliveries')
    expect(answered.size).toBe(40)
    expect([...answered.values()].filter((n) => n !== 1)).toEqual([])
    for (const p of [a, b]) p.send('pause')
    await Promise.all([a.saw('paused'), b.saw('paused')])
    state.mode = 'hang-a'
    await create(6)
    a.send('go')
    await until(() => state.hung === 6, 60_000, 'process a to attempt 6 deliveries')
    a.child.kill('SIGKILL')
    await once(a.child, 'exit')
    state.mode = 'ok'
    b.send('go')
    // The 6 claims of a end 30 s after it took them: then b sees them due and delivers them.
    await until(async () => (await delivered()).length === 46, 90_000, '46 deliveries')
    expect(answered.size).toBe(46)
    expect([...answered.values()].filter((n) => n !== 1)).toEqual([])
    const all = await service.admin.webhooks.deliveries(tenantId, { limit: 100 })
    expect(all.map((d) => [d.state, d.attempts.length])).toEqual(all.map(() => ['delivered', 1]))
  } finally {
    for (const p of [a, b])
      if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL')
    await service.close()
    server.close()
  }
}
