import { EventEmitter } from 'node:events'
import { existsSync, readdirSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import type { Worker } from 'node:worker_threads'
import { afterEach, describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import type { StoreCall, StoreReply } from '../../adapters/thread-store/index.js'
import { HeavyLane, type HeavyLaneOptions, type LaneConfig, type LaneRequest } from '../../bin/heavy-lane.js'
import { answerOnLane } from '../../bin/lane-answer.js'
import { jsonEvent } from '../../bin/serve.js'
import { tempDir } from '../file/helpers.js'
import { threadNiceness } from '../support/threads.js'
import { start } from './spawn.js'

/**
 * The heavy lane's routing (bin/heavy-lane.ts) with a stand-in for its thread and a clock the test
 * moves: each request says in `x-ms` how long it takes, wherever it is answered.
 */
const config: LaneConfig = {
  store: 'file:/nowhere',
  serviceBounds: {},
  httpBounds: {},
  logFormat: 'none',
  nice: 10,
}

/** The lane's thread, stood in for: answers each request `lane` after its `x-ms`, or holds it (`hold`). */
class FakeLane extends EventEmitter {
  hold = false
  /** The status it answers with. */
  status = 200
  readonly held: LaneRequest[] = []
  /** How many chunks each body posted to it came in. */
  readonly chunks: number[] = []
  /** The answers to the store calls it made (`{ store: call }` emitted), as posted to it. */
  readonly stored: StoreReply[] = []
  constructor(
    private readonly clock: { ms: number },
    readonly config: LaneConfig,
  ) {
    super()
    queueMicrotask(() => this.emit('message', { ready: true }))
  }
  unref() {}
  postMessage(m: LaneRequest | { stored: StoreReply[] }) {
    if ('stored' in m) return void this.stored.push(...m.stored)
    if (this.hold) return void this.held.push(m)
    this.clock.ms += Number(m.headers['x-ms'] ?? 0)
    if (m.body) this.chunks.push(m.body.length)
    const sent = m.body ? new TextDecoder().decode(Buffer.concat(m.body)) : ''
    const body = new TextEncoder().encode(`lane ${sent.length}`)
    setImmediate(() => this.emit('message', { answer: { id: m.id, status: this.status, headers: {}, body } }))
  }
  terminate() {
    this.emit('exit', 1)
    return Promise.resolve(1)
  }
}

/** A file store's `commitForwarded`, stood in for: no write reaches it in these tests. */
const fileCommits: HeavyLaneOptions['commits'] = {
  commitForwarded: () => Promise.reject(new Error('no write is forwarded in these tests')),
}

const servers: Server[] = []
afterEach(() => {
  for (const s of servers.splice(0)) s.close()
})

/**
 * `commits`: the main thread's file store stood in for; `serves`: a memory store whose every call
 * the main thread answers for the lane (either way the lane takes large bodies too).
 */
async function routed(stores: Pick<HeavyLaneOptions, 'commits' | 'serves'> = {}) {
  const clock = { ms: 0 }
  const lanes: FakeLane[] = []
  const lines: string[] = []
  const lane = new HeavyLane({
    config,
    ...stores,
    log: (line) => lines.push(line),
    now: () => clock.ms,
    start: (started) => {
      const made = new FakeLane(clock, started)
      lanes.push(made)
      return made as unknown as Worker
    },
  })
  /** Requests sent with `x-hold`, held by the main thread until released (the clock moved by `ms` first). */
  const held: ((ms: number) => void)[] = []
  const local = (req: IncomingMessage, res: ServerResponse) => {
    req.resume()
    if (req.headers['x-hold']) {
      held.push((ms) => {
        clock.ms += ms
        res.end('local')
      })
      return
    }
    clock.ms += Number(req.headers['x-ms'] ?? 0)
    if (req.headers['x-status']) res.statusCode = Number(req.headers['x-status'])
    req.on('end', () => res.end('local'))
  }
  const server = createServer(lane.listener(local))
  servers.push(server)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const call = async (
    key: string | null,
    ms: number,
    init: {
      path?: string
      body?: string
      hold?: true
      status?: number
      headers?: Record<string, string>
    } = {},
  ) => {
    const headers: Record<string, string> = { 'x-ms': String(ms), ...init.headers }
    if (key) headers['bt-api-key'] = key
    if (init.hold) headers['x-hold'] = '1'
    if (init.status) headers['x-status'] = String(init.status)
    const r = await fetch(`${url}${init.path ?? '/tokens/x'}`, {
      method: init.body === undefined ? 'GET' : 'POST',
      headers,
      ...(init.body === undefined ? {} : { body: init.body }),
    })
    return { status: r.status, text: await r.text(), retryAfter: r.headers.get('retry-after') }
  }
  const where = async (key: string | null, ms: number, init?: { path?: string; body?: string }) =>
    (await call(key, ms, init)).text.split(' ')[0]
  return { lane, lanes, lines, call, where, held, clock }
}

/** One turn of the event loop. */
const turn = () => new Promise((r) => setImmediate(r))

describe('heavy lane: which requests go to the lane thread', () => {
  it('a key goes once the mean of its last requests reaches 8 ms, and comes back once it falls under 2 ms over its last 8', async () => {
    const { where } = await routed()
    expect(await where('key_slow', 8)).toBe('local')
    expect(await where('key_slow', 0)).toBe('lane')
    const { where: where1 } = await routed()
    expect(await where1('key_almost', 7.9)).toBe('local')
    expect(await where1('key_almost', 0)).toBe('local')
    // key_almost's times are now 7.9 and 0: a mean of 3.95.
    expect(await where1('key_almost', 16.1)).toBe('local')
    expect(await where1('key_almost', 0)).toBe('lane')

    // On the lane, a mean of exactly 2 ms keeps a key there; 1.99 brings it back.
    const { where: where2 } = await routed()
    expect(await where2('key_a', 8)).toBe('local')
    for (let i = 0; i < 8; i++) expect(await where2('key_a', 2)).toBe('lane')
    expect(await where2('key_a', 1.99)).toBe('lane')
    expect(await where2('key_a', 0)).toBe('local')

    // The mean is over the last 8: a 50 ms request keeps a key on the lane through 7 of 1 ms, not 8.
    const { where: where3 } = await routed()
    expect(await where3('key_b', 50)).toBe('local')
    for (let i = 0; i < 8; i++) expect(await where3('key_b', 1)).toBe('lane')
    expect(await where3('key_b', 1)).toBe('local')
  })

  it('requests without an API key, of the test control plane, of documents, or with a body over 64 KiB stay on the main thread', async () => {
    const { where } = await routed()
    expect(await where('key_h', 100)).toBe('local')
    expect(await where('key_h', 0)).toBe('lane')
    expect(await where(null, 100)).toBe('local')
    expect(await where('key_h', 0, { path: '/_test/clock' })).toBe('local')
    expect(await where('key_h', 0, { path: '/documents/abc' })).toBe('local')
    expect(await where('key_h', 0, { path: '/_console/' })).toBe('local')
    expect(await where('key_h', 0, { body: 'x'.repeat(65_537) })).toBe('local')
    expect(await where('key_h', 0, { body: 'x'.repeat(65_536) })).toBe('lane')
  })

  it("takes bodies over 64 KiB too when the main thread's store commits the lane's writes (a file store)", async () => {
    const { where, lanes } = await routed({ commits: fileCommits })
    expect(await where('key_h', 100)).toBe('local')
    expect(await where('key_h', 0, { body: 'x'.repeat(400_000) })).toBe('lane')
    expect(await where('key_h', 0, { path: '/documents/abc' })).toBe('local')
    expect(lanes[0]!.config).toMatchObject({ forwardWrites: true, storeOnMain: false })
    // Posted as the socket's chunks, never joined on this thread.
    expect(lanes[0]!.chunks.at(-1)).toBeGreaterThan(1)
  })

  it("on a memory store, takes bodies over 64 KiB too and answers the lane's store calls with the main thread's store", async () => {
    const held = memoryStore()
    await held.write({ ops: [{ op: 'tenant.put', tenant: { id: 't1', name: 'one' } as never }] })
    const { where, lanes } = await routed({ serves: held })
    expect(await where('key_h', 100)).toBe('local')
    expect(await where('key_h', 0, { body: 'x'.repeat(400_000) })).toBe('lane')
    const made = lanes[0]!
    expect(made.config).toMatchObject({ forwardWrites: false, storeOnMain: true })
    const calls: StoreCall[] = [
      { id: 1, method: 'getTenant', args: ['t1'] },
      { id: 2, method: 'getTenant', args: ['t2'] },
      { id: 3, method: 'close', args: [] },
    ]
    // Two messages: the calls of one turn of the lane go together.
    made.emit('message', { store: calls.slice(0, 2) })
    made.emit('message', { store: calls.slice(2) })
    for (let i = 0; i < 50 && made.stored.length < 3; i++) await turn()
    const byId = new Map(made.stored.map((r) => [r.id, r]))
    expect(byId.get(1)).toEqual({ id: 1, result: expect.objectContaining({ id: 't1', name: 'one' }) })
    expect(byId.get(2)).toEqual({ id: 2, result: null })
    // The lane never closes the store this thread holds.
    expect(byId.get(3)).toEqual({ id: 3, error: { message: 'thread store: no such call: close' } })
    expect(await held.getTenant('t1')).not.toBeNull()
  })

  it("a new key's requests that come while its first is under way wait for its answer, which places them", async () => {
    const { lane, lanes, call, held } = await routed()
    lane.start()
    // Answered in 20 ms: the three that waited go to the lane.
    const first = call('key_burst', 0, { hold: true })
    while (held.length < 1) await turn()
    const after = [call('key_burst', 0), call('key_burst', 0), call('key_burst', 0)]
    for (let i = 0; i < 50; i++) await turn()
    expect(held).toHaveLength(1)
    expect(lanes[0]!.held).toHaveLength(0)
    held.shift()!(20)
    expect((await first).text).toBe('local')
    expect((await Promise.all(after)).map((a) => a.text)).toEqual(['lane 0', 'lane 0', 'lane 0'])

    // Answered in 1 ms: the ones that waited are answered on the main thread.
    const light = call('key_light', 0, { hold: true })
    while (held.length < 1) await turn()
    const others = [call('key_light', 0), call('key_light', 0)]
    for (let i = 0; i < 50; i++) await turn()
    held.shift()!(1)
    expect((await light).text).toBe('local')
    expect((await Promise.all(others)).map((a) => a.text)).toEqual(['local', 'local'])
  })

  it('a first request that has run 8 ms places its key on the lane: the one that comes then, and those waiting, go there', async () => {
    const { lane, call, held, clock } = await routed()
    lane.start()
    const first = call('key_long', 0, { hold: true })
    while (held.length < 1) await turn()
    const waiting = call('key_long', 0)
    for (let i = 0; i < 50; i++) await turn()
    clock.ms += 7.9
    const early = call('key_long', 0)
    for (let i = 0; i < 50; i++) await turn()
    clock.ms += 0.1
    // 8 ms into the first: this request, and the two waiting, go to the lane before it is answered.
    expect((await call('key_long', 0)).text).toBe('lane 0')
    expect((await waiting).text).toBe('lane 0')
    expect((await early).text).toBe('lane 0')
    held.shift()!(0)
    expect((await first).text).toBe('local')
  })

  it('a key goes only while its mean is 4 times the lowest of the other keys seen in the last second', async () => {
    // key_l's mean is 2.5 ms: another key goes at a mean of 10, not 9.99.
    const { where } = await routed()
    expect(await where('key_l', 2.5)).toBe('local')
    expect(await where('key_v', 9.99)).toBe('local')
    expect(await where('key_v', 0)).toBe('local')
    const { where: where2 } = await routed()
    expect(await where2('key_l', 2.5)).toBe('local')
    expect(await where2('key_w', 10)).toBe('local')
    expect(await where2('key_w', 0)).toBe('lane')

    // A key slowed by a heavy one (mean 50) stays while that key was seen 999.99 ms before; at
    // 1 000 ms that key is no longer active, and 8 ms goes, as for a key alone.
    const { where: where3, clock } = await routed()
    expect(await where3('key_h', 50)).toBe('local')
    clock.ms += 979.99
    expect(await where3('key_v', 20)).toBe('local')
    expect(await where3('key_v', 0)).toBe('local')
    const { where: where4, clock: clock4 } = await routed()
    expect(await where4('key_h', 50)).toBe('local')
    clock4.ms += 980
    expect(await where4('key_v', 20)).toBe('local')
    expect(await where4('key_v', 0)).toBe('lane')
  })

  it("compares with the other keys' least times, not their means: a key that slows the others still goes", async () => {
    // key_v's requests waited behind key_h's (30 ms) but one took 1 ms: a mean of 20.3, a least of 1.
    const { where } = await routed()
    expect(await where('key_h', 100)).toBe('local')
    expect(await where('key_v', 1)).toBe('local')
    expect(await where('key_v', 30)).toBe('local')
    expect(await where('key_v', 30)).toBe('local')
    expect(await where('key_a', 12)).toBe('local')
    expect(await where('key_a', 0)).toBe('lane')
  })

  it('a key whose mean reaches 32 ms goes whatever the other keys take', async () => {
    const { where } = await routed()
    expect(await where('key_slow', 10)).toBe('local')
    expect(await where('key_x', 31.99)).toBe('local')
    expect(await where('key_x', 0)).toBe('local')
    const { where: where2 } = await routed()
    expect(await where2('key_slow', 10)).toBe('local')
    expect(await where2('key_x', 32)).toBe('local')
    expect(await where2('key_x', 0)).toBe('lane')
  })

  it("a key waiting behind another key's first request counts that request's time so far, and stays", async () => {
    const { lane, call, where, held } = await routed()
    lane.start()
    expect(await where('key_v', 1)).toBe('local')
    const first = call('key_a', 0, { hold: true })
    while (held.length < 1) await turn()
    // key_v's requests take 30 ms while key_a's first is under way: 15.5, then 20.3 on average, which
    // is not 4 times that first's 30, then 60 ms so far.
    expect(await where('key_v', 30)).toBe('local')
    expect(await where('key_v', 30)).toBe('local')
    expect(await where('key_v', 0)).toBe('local')
    held.shift()!(0)
    expect((await first).text).toBe('local')
  })

  it("a new key's first request places it on the lane at 8 ms only when that is 4 times the lowest other key's mean", async () => {
    const { lane, call, where, held, clock } = await routed()
    lane.start()
    expect(await where('key_v', 3)).toBe('local')
    const first = call('key_a', 0, { hold: true })
    while (held.length < 1) await turn()
    clock.ms += 11.99
    // 11.99 ms into the first: not 4 times key_v's 3, so the next waits for it.
    const waiting = call('key_a', 0)
    for (let i = 0; i < 50; i++) await turn()
    clock.ms += 0.01
    expect((await call('key_a', 0)).text).toBe('lane 0')
    expect((await waiting).text).toBe('lane 0')
    held.shift()!(0)
    expect((await first).text).toBe('local')
  })

  it("keeps 256 requests waiting for their key's first in all: the 257th is answered on the main thread at once", async () => {
    const { call, held } = await routed()
    const firsts = [call('key_w1', 0, { hold: true }), call('key_w2', 0, { hold: true })]
    while (held.length < 2) await turn()
    const texts: string[] = []
    const waiting = Array.from({ length: 256 }, (_, i) =>
      call(i % 2 ? 'key_w1' : 'key_w2', 0).then((a) => texts.push(a.text)),
    )
    for (let i = 0; i < 200; i++) await turn()
    expect(texts).toEqual([])
    expect((await call('key_w1', 0)).text).toBe('local')
    expect(texts).toEqual([])
    for (const release of held.splice(0)) release(1)
    await Promise.all([...firsts, ...waiting])
    expect(texts.filter((t) => t === 'local')).toHaveLength(256)
  })

  it('never times a key answered 401: it stays on the main thread, and one refused on the lane comes back', async () => {
    const { lanes, call, where } = await routed()
    // A made-up key answered slowly (its connection backed up) is still refused each time.
    for (let i = 0; i < 3; i++) expect((await call('key_madeup', 100, { status: 401 })).status).toBe(401)
    expect(await where('key_madeup', 0)).toBe('local')
    // A heavy key revoked: the lane answers it 401 once, and it is back on the main thread.
    expect(await where('key_revoked', 100)).toBe('local')
    expect(await where('key_revoked', 0)).toBe('lane')
    lanes[0]!.status = 401
    await call('key_revoked', 0)
    lanes[0]!.status = 200
    expect(await where('key_revoked', 0)).toBe('local')
  })

  it("reads a request's key as the handler does: an empty first key header is no key, and never the next header's", async () => {
    const { where, call } = await routed()
    expect(await where('key_h', 100)).toBe('local')
    expect(await where('key_h', 0)).toBe('lane')
    // The handler reads SVC-API-KEY first and refuses it empty: that 401 is no time of key_h's.
    const refused = await call('key_h', 0, { headers: { 'svc-api-key': '' }, status: 401 })
    expect([refused.status, refused.text]).toEqual([401, 'local'])
    expect(await where('key_h', 0)).toBe('lane')
  })

  it('the lane gets the body as sent, and another key is answered on the main thread meanwhile', async () => {
    const { call, where } = await routed()
    await where('key_h', 20)
    expect((await call('key_h', 0, { body: 'abcdef' })).text).toBe('lane 6')
    expect(await where('key_other', 1)).toBe('local')
  })

  it('holds 256 requests at once: the 257th of a heavy key is answered on the main thread', async () => {
    const { lanes, call, where } = await routed()
    await where('key_h', 100)
    const lane = lanes[0]!
    lane.hold = true
    // 264 at once: the 32nd, 96th and 224th are probes answered on the main thread (100 ms: the key
    // stays), 256 are held and the last 5 find the lane full.
    let locals = 0
    const held = Array.from({ length: 264 }, () =>
      call('key_h', 100).then((a) => {
        if (a.text === 'local') locals++
        return a
      }),
    )
    while (lane.held.length < 256 || locals < 8) await new Promise((r) => setImmediate(r))
    expect(await where('key_h', 100)).toBe('local')
    expect(lane.held).toHaveLength(256)
    lane.hold = false
    for (const m of lane.held.splice(0)) lane.postMessage(m)
    const answers = (await Promise.all(held)).map((a) => a.text)
    expect(answers.filter((a) => a === 'lane 0')).toHaveLength(256)
    expect(answers.filter((a) => a === 'local')).toHaveLength(8)
  })

  it('holds 64 MiB of bodies at once (each counted at its declared length): past them a request is answered on the main thread', async () => {
    const { lanes, call, where } = await routed({ commits: fileCommits })
    await where('key_h', 100)
    const lane = lanes[0]!
    lane.hold = true
    // 66 bodies of 1 MiB, one after another: the 32nd is a probe answered on the main thread, the
    // 64 others fill the lane's 64 MiB, and the 66th finds no room left.
    const body = 'x'.repeat(1024 * 1024)
    const answers: Promise<{ text: string }>[] = []
    const texts: string[] = []
    for (let i = 1; i <= 66; i++) {
      answers.push(
        call('key_h', 100, { body }).then((a) => {
          texts.push(a.text)
          return a
        }),
      )
      const [held, locals] = [lane.held.length, texts.length]
      while (lane.held.length === held && texts.length === locals) await new Promise((r) => setImmediate(r))
    }
    expect(lane.held).toHaveLength(64)
    expect(texts).toEqual(['local', 'local'])
    // A request without a body still fits; one more byte does not.
    lane.hold = false
    expect(await where('key_h', 0, { body: 'x' })).toBe('local')
    expect(await where('key_h', 0)).toBe('lane')
    for (const m of lane.held.splice(0)) lane.postMessage(m)
    const all = (await Promise.all(answers)).map((a) => a.text)
    expect(all.filter((a) => a === `lane ${1024 * 1024}`)).toHaveLength(64)
    // Once answered, the lane takes bodies again.
    expect(await where('key_h', 100, { body })).toBe('lane')
  })

  it('the 32nd request of a key on the lane is a probe on the main thread: under 8 ms there, the key comes back', async () => {
    const { where } = await routed()
    expect(await where('key_p', 100)).toBe('local')
    for (let i = 1; i < 32; i++) expect(await where('key_p', 50)).toBe('lane')
    expect(await where('key_p', 8)).toBe('local')
    // A probe that found it heavy: the next is 64 requests on, not 32.
    for (let i = 1; i < 64; i++) expect(await where('key_p', 50)).toBe('lane')
    expect(await where('key_p', 7.9)).toBe('local')
    expect(await where('key_p', 0)).toBe('local')

    // Back by its mean (8 requests of 1 ms on the lane), then heavy again: its count starts over.
    const { where: whereQ } = await routed()
    expect(await whereQ('key_q', 100)).toBe('local')
    for (let i = 0; i < 8; i++) expect(await whereQ('key_q', 1)).toBe('lane')
    expect(await whereQ('key_q', 100)).toBe('local')
    for (let i = 1; i < 32; i++) expect(await whereQ('key_q', 50)).toBe('lane')
    expect(await whereQ('key_q', 50)).toBe('local')
  })

  it('probes a key found heavy ever less often: after 32, 64, 128 … requests, then every 1024', async () => {
    const { where } = await routed()
    expect(await where('key_big', 100)).toBe('local')
    const probes: number[] = []
    for (let i = 1; i <= 3040; i++) if ((await where('key_big', 50)) === 'local') probes.push(i)
    expect(probes).toEqual([32, 96, 224, 480, 992, 2016, 3040])
    // Back on the main thread and heavy again: its first probe is the 32nd once more.
    const { where: again } = await routed()
    expect(await again('key_c', 100)).toBe('local')
    for (let i = 1; i < 32; i++) await again('key_c', 50)
    expect(await again('key_c', 7)).toBe('local')
    expect(await again('key_c', 100)).toBe('local')
    for (let i = 1; i < 32; i++) expect(await again('key_c', 50)).toBe('lane')
    expect(await again('key_c', 50)).toBe('local')
  }, 120_000)

  it('remembers 4096 keys: the least recently seen is forgotten past them', async () => {
    const { where } = await routed()
    await where('key_first', 100)
    for (let i = 0; i < 4095; i++) await where(`key_${i}`, 0)
    expect(await where('key_first', 0)).toBe('lane')
    for (let i = 0; i < 4096; i++) await where(`key_next_${i}`, 0)
    expect(await where('key_first', 0)).toBe('local')
  }, 120_000)

  it('a request the lane held when its thread ended is answered 503 with Retry-After: 1; the thread starts again at most 3 times', async () => {
    const { lane, lanes, lines, call, where } = await routed()
    lane.start()
    await where('key_h', 100)
    for (let ended = 0; ended < 4; ended++) {
      const current = lanes.at(-1)!
      current.hold = true
      const answer = call('key_h', 0)
      while (current.held.length === 0) await new Promise((r) => setImmediate(r))
      current.emit('exit', 1)
      expect(await answer).toMatchObject({ status: 503, retryAfter: '1' })
      // Counting that answer started the thread again, three times; not a fourth.
      expect(await where('key_h', 0)).toBe(ended < 3 ? 'lane' : 'local')
    }
    expect(lanes.length).toBe(4)
    expect(lines.filter((l) => l.includes('every request is answered on the main thread'))).toHaveLength(1)
  })
})

describe("the lane thread's answers", () => {
  const request: LaneRequest = {
    id: 7,
    method: 'POST',
    target: '/tokens?x=1',
    headers: { 'bt-api-key': 'key_1' },
    // The socket's chunks, as the main thread posts them: joined on the lane.
    body: [new TextEncoder().encode('{"data":'), new TextEncoder().encode('"4242424242424242"}')],
    read: 'whole',
  }

  it('answers through the exchange, the request as posted, the body as bytes of their own', async () => {
    const seen: string[] = []
    const { answer, log } = await answerOnLane(async (incoming) => {
      const body = await incoming.readBody(1024)
      seen.push(incoming.method, incoming.target, incoming.header('bt-api-key') ?? '')
      return { status: 201, headers: { 'x-a': 'b' }, body: new TextDecoder().decode(body as Uint8Array) }
    }, request)
    expect(seen).toEqual(['POST', '/tokens?x=1', 'key_1'])
    expect(answer).toMatchObject({ id: 7, status: 201, headers: { 'x-a': 'b' } })
    expect(new TextDecoder().decode(answer.body!)).toBe('{"data":"4242424242424242"}')
    expect(log).toBeUndefined()
  })

  it('answers 503 with Retry-After: 1 when its handling throws, and logs the kind of error, never what it says', async () => {
    const { answer, log } = await answerOnLane(async () => {
      throw new TypeError('card 4242424242424242 could not be read')
    }, request)
    expect(answer).toMatchObject({ id: 7, status: 503, headers: { 'retry-after': '1' } })
    expect(JSON.parse(new TextDecoder().decode(answer.body!))).toMatchObject({ status: 503 })
    expect(log).toBe('heavy lane: a request failed (TypeError)')
  })

  it('marks its JSON log lines with "lane": true, and only its own', () => {
    const event = {
      kind: 'request',
      method: 'GET',
      path: '/tokens/x',
      status: 200,
      ms: 1,
      requestId: 'r1',
    } as const
    expect(JSON.parse(jsonEvent(event, true))).toMatchObject({ lane: true, request_id: 'r1' })
    expect(JSON.parse(jsonEvent(event))).not.toHaveProperty('lane')
    const failed = {
      kind: 'error',
      method: 'GET',
      path: '/',
      error: new Error('x'),
      requestId: 'r2',
      expected: true,
    } as const
    expect(JSON.parse(jsonEvent(failed, true))).toMatchObject({ lane: true, level: 'warn' })
  })
})

describe('heavy lane in tokenvault serve', () => {
  // On a memory store the lane's every store call is answered by the main thread's store.
  it.each(['file', 'memory'])(
    "%s store: answers a key reading large tokens many at once on its thread, with the main thread's answers, and SIGTERM ends cleanly",
    async (kind) => {
      const dir = await tempDir()
      const store = kind === 'file' ? `file:${join(dir, 'vault')}` : 'memory'
      const server = start(['serve', '--port', '0', '--store', store], dir, {
        TOKENVAULT_HEAVY_LANE: 'on',
      })
      const url = (await server.line(1)).slice('listening on '.length)
      const management = (await server.line(2)).slice('management key: '.length)
      const call = async (method: string, path: string, key: string, body?: unknown) => {
        const r = await fetch(`${url}${path}`, {
          method,
          headers: { 'BT-API-KEY': key, 'content-type': 'application/json' },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        })
        return { status: r.status, text: await r.text() }
      }
      const perms = ['token:create', 'token:read']
      const rules = [
        { description: 'all', priority: 1, container: '/', transform: 'reveal', permissions: perms },
      ]
      const app = (name: string) =>
        call('POST', '/applications', management, { name, type: 'private', permissions: perms, rules })
      const heavyApp = JSON.parse((await app('heavy')).text) as { id: string; key: string }
      const heavy = heavyApp.key
      const light = JSON.parse((await app('light')).text).key as string
      const big = JSON.parse(
        (await call('POST', '/tokens', heavy, { type: 'token', data: 'x'.repeat(400_000) })).text,
      )
      const small = JSON.parse((await call('POST', '/tokens', light, { type: 'token', data: 'small' })).text)
      const first = await call('GET', `/tokens/${big.id}`, heavy)
      // Many at once: each waits behind the others, so the key's requests are slow wherever it runs.
      const laneLines = () =>
        server
          .stderr()
          .split('\n')
          .filter((l) => l.endsWith(' lane'))
      for (let round = 0; round < 40 && laneLines().length === 0; round++) {
        const answers = await Promise.all(
          Array.from({ length: 32 }, () => call('GET', `/tokens/${big.id}`, heavy)),
        )
        for (const a of answers) expect(a).toEqual(first)
      }
      expect(laneLines().length).toBeGreaterThan(0)
      expect(server.stderr()).toContain('heavy lane: started')
      // The lane's thread (and what it started) runs at niceness 10, the main thread at 0 (Linux:
      // the 19th field of each thread's stat).
      const tasks = `/proc/${server.child.pid}/task`
      if (existsSync(tasks)) {
        const niceness = (tid: string) => threadNiceness(server.child.pid!, tid)
        expect(niceness(String(server.child.pid))).toBe(0)
        expect(readdirSync(tasks).map(niceness)).toContain(10)
      }
      // Another key's answers are the main thread's or the lane's by its own times (the unit tests
      // above): here, that they are right wherever they come from.
      expect(JSON.parse((await call('GET', `/tokens/${small.id}`, light)).text)).toMatchObject({
        data: 'small',
      })

      // One transaction staged through both threads' services, then committed: on the main thread by
      // a second key of the heavy key's application (its first request: a key with no times is never
      // heavy), on the lane by the heavy key (its write sent after a burst of its reads, which keep it
      // there).
      const other = JSON.parse((await call('POST', `/applications/${heavyApp.id}/keys`, management)).text)
        .key as string
      const tx = JSON.parse((await call('POST', '/transactions', heavy)).text).id as string
      const stage = async (key: string, data: string) => {
        const r = await fetch(`${url}/tokens`, {
          method: 'POST',
          headers: { 'BT-API-KEY': key, 'BT-TRANSACTION-ID': tx, 'content-type': 'application/json' },
          body: JSON.stringify({ type: 'token', data }),
        })
        expect(r.status).toBe(201)
        return ((await r.json()) as { id: string }).id
      }
      // Each request has its log line, written a moment after its answer.
      const postLines = () =>
        server
          .stderr()
          .split('\n')
          .filter((l) => l.includes(' POST /tokens '))
      const logged = async (n: number) => {
        for (let i = 0; i < 400 && postLines().length < n; i++) await new Promise((r) => setTimeout(r, 25))
        return postLines()
      }
      const before = postLines().length
      const staged = [await stage(other, 'staged 0')]
      expect((await logged(before + 1))[before]).not.toMatch(/ lane$/)
      for (let i = 0; i < 20 && !postLines().some((l) => l.endsWith(' lane')); i++) {
        const seen = postLines().length
        // 21 requests a round, so the write is not every round the key's 32nd (a probe, answered on
        // the main thread).
        const burst = Array.from({ length: 20 }, () => call('GET', `/tokens/${big.id}`, heavy))
        staged.push(await stage(heavy, `staged ${staged.length}`))
        await Promise.all(burst)
        await logged(seen + 1)
      }
      expect(postLines().filter((l) => l.endsWith(' lane')).length).toBeGreaterThan(0)
      expect((await call('GET', `/tokens/${staged[0]}`, light)).status).toBe(404)
      expect((await call('POST', `/transactions/${tx}/commit`, heavy)).status).toBe(200)
      for (const [i, id] of staged.entries())
        expect(JSON.parse((await call('GET', `/tokens/${id}`, light)).text)).toMatchObject({
          data: `staged ${i}`,
        })

      // Large creates of the heavy key (bodies over 64 KiB) on the lane: the main thread's store
      // commits their writes (a file store has one writer a process; a memory store is the main
      // thread's), and they read back whole.
      const lanePosts = () => postLines().filter((l) => l.endsWith(' lane')).length
      const onLane = lanePosts()
      const large: { id: string; data: string }[] = []
      for (let i = 0; i < 20 && lanePosts() === onLane; i++) {
        const seen = postLines().length
        const burst = Array.from({ length: 20 }, () => call('GET', `/tokens/${big.id}`, heavy))
        const data = `${i}`.padEnd(100_000, 'y')
        const made = await call('POST', '/tokens', heavy, { type: 'token', data })
        expect(made.status).toBe(201)
        large.push({ id: JSON.parse(made.text).id, data })
        await Promise.all(burst)
        await logged(seen + 1)
      }
      expect(lanePosts()).toBeGreaterThan(onLane)
      for (const { id, data } of large)
        expect(JSON.parse((await call('GET', `/tokens/${id}`, light)).text)).toMatchObject({ data })

      server.child.kill('SIGTERM')
      expect((await server.exited)[0]).toBe(0)
    },
    120_000,
  )

  it('--heavy-lane takes on or off', async () => {
    const bad = start(['serve', '--port', '0', '--store', 'memory', '--heavy-lane', 'maybe'])
    expect((await bad.exited)[0]).not.toBe(0)
    expect(bad.stderr()).toContain('--heavy-lane (TOKENVAULT_HEAVY_LANE) must be on or off, not maybe')
  })
})
