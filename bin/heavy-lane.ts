import { createHash } from 'node:crypto'
import { stat } from 'node:fs'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { Worker } from 'node:worker_threads'
import {
  type ForwardedResult,
  type ForwardedWrite,
  forwardedResult,
  movable,
} from '../adapters/file/forward.js'
import { TOO_LARGE, UNREADABLE } from '../adapters/http/exchange.js'
import { DEFAULT_MAX_BODY_BYTES, headerNames, headerPrefixes } from '../adapters/http/handler.js'
import type { NodeListener } from '../adapters/http/index.js'
import { nodeHeaders, readNodeChunks, writeOutgoing } from '../adapters/http/node.js'
import { problem } from '../adapters/http/problem.js'
import { answerStoreCalls, type StoreCall, type StoreReply } from '../adapters/thread-store/index.js'
import type { Store, WriteResult } from '../src/store/index.js'

/**
 * The heavy lane of `tokenvault serve`: a worker thread with a service of its own over the same
 * store (on a memory store, the main thread's, every call posted to it: `LaneConfig.storeOnMain`),
 * which answers the requests of the API keys whose recent requests were slow (large values read,
 * long searches, filters, many at once). Their large strings, parses and collections then happen
 * on the lane's thread and heap, and every other key is answered on the main thread without
 * waiting behind them (`npm run bench:attacks`; docs/server.md, "The heavy lane").
 */

/** What the lane's worker needs to build its service: plain data, copied to the thread. */
export interface LaneConfig {
  /** The `--store` value (`memory`, `file:PATH` or a `postgres://` URL). */
  store: string
  masterKey?: Uint8Array
  webhookSigningKey?: string
  reactorEgress?: readonly string[]
  /** The bounds of `createService` and of the HTTP handler, as `serve` splits them. */
  serviceBounds: Record<string, number>
  httpBounds: Record<string, number>
  headerPrefix?: string
  corsOrigins?: readonly string[]
  logFormat: 'text' | 'json' | 'none'
  /** The lane thread's niceness (`LANE_NICE` in `serve`). */
  nice: number
  /**
   * Set by `HeavyLane` when it has `commits` (a file store): the lane's writes are committed by the
   * main thread's store, in its group commit (`FileStoreOptions.commitsOn`), not by a second writer
   * of the same file.
   */
  forwardWrites?: boolean
  /**
   * Set by `HeavyLane` when it `serves` a store (the memory store, whose maps only the main thread
   * holds): the lane's service calls it through messages (`adapters/thread-store`).
   */
  storeOnMain?: boolean
}

/**
 * One request handed to the lane: the exchange's view of it, its body read whole on the main
 * thread, as the socket's chunks (the lane joins them: `readNodeChunks`).
 */
export interface LaneRequest {
  id: number
  method: string
  target: string
  headers: Record<string, string>
  body: Uint8Array[] | null
  /** How reading the body ended: `too large` (past the handler's limit: the lane answers its 413), `unreadable`. */
  read: 'whole' | 'too large' | 'unreadable'
}

/** The lane's answer to one request. */
export interface LaneAnswer {
  id: number
  status: number
  headers: Record<string, string>
  cookies?: readonly string[]
  body: Uint8Array | null
}

/** What the lane's worker posts: ready, an answer, a log line, a write to commit, or why it could not start. */
export type FromLane =
  | { ready: true }
  | { answer: LaneAnswer }
  | { log: string }
  | { failed: string }
  | { write: { id: number; write: ForwardedWrite } }
  | { store: StoreCall[] }

/** What the main thread posts to the lane: a request, how one of its forwarded writes ended, or a store call's answer. */
export type ToLane = LaneRequest | { wrote: number; answer: ForwardedResult } | { stored: StoreReply[] }

/**
 * A key's requests go to the lane once the mean time of its last `MEAN_OF` requests (from arrival
 * to the answer's end; fewer while it has made fewer) reaches `HEAVY_MS`, and come back once that
 * mean falls under `LIGHT_MS`.
 */
export const HEAVY_MS = 8
export const LIGHT_MS = 2
/**
 * A key's times are wall times: a light key's requests that waited behind a heavy key's work on the
 * main thread look slow too. So a key goes to the lane only while its mean (or its first request's
 * time so far) is also at least `STANDS_OUT` times the least time of the other keys seen in the
 * last `ACTIVE_MS` (the quickest of each one's last `MEAN_OF` requests, what it costs when it waits
 * for no one; a key whose first request is under way counts with that request's time so far); a
 * key with no other key active goes by `HEAVY_MS` alone, and one whose mean reaches `ALWAYS_HEAVY_MS`
 * goes whatever the others' times. Otherwise the bystander of a burst went to the lane behind the
 * key that slowed it (34 of 87 GETs in a round of `npm run bench:attacks`); compared with the other
 * keys' means, a key slowing every other key's requests would stay on the main thread.
 */
export const STANDS_OUT = 4
export const ACTIVE_MS = 1000
export const ALWAYS_HEAVY_MS = 32
/** How long the least times of the active keys, once looked for, are used before they are looked for again. */
const LOWEST_KEPT_MS = 5
/** How many of a key's latest requests its mean is taken over. */
export const MEAN_OF = 8
/**
 * The 32nd request of a key after it went to the lane is answered on the main thread instead (a
 * probe): the key comes back if it took less than `HEAVY_MS` there. Its times on the lane include
 * waiting behind the heavy keys it shares the lane with, so a key moved there in a burst of load
 * could otherwise stay. Each probe that finds the key heavy doubles the count to the next, up to
 * `PROBE_MAX`: a key heavy in its own right (a page of 3.6 MB) costs the main thread one request
 * in 1 024 once it has shown it, not one in 32.
 */
export const PROBE_EVERY = 32
export const PROBE_MAX = 1024
/** Keys remembered at once (the least recently seen is forgotten past it). */
export const MAX_KEYS = 4096
/**
 * Requests of keys not timed yet that wait, in all, for their key's first request (see
 * `KeyCost.first`); past it one more is answered on the main thread at once, as before.
 */
export const UNTIMED_WAITING = 256
/** Times the lane is started again after its thread ended; past it the lane stays off (logged). */
export const LANE_RESTARTS = 3
/**
 * The lane thread's niceness (0 is the main thread's, 19 the least): when both want a core the
 * main thread gets about ten times the lane's share (Linux's weights 1024 and 110).
 */
export const LANE_NICE = 10
/**
 * The lane's connections to PostgreSQL (the main thread's pool has pg's 10): the database's
 * processes run at the host's niceness, not the lane's, so the heavy keys' reads of large rows
 * get at most this many of them at once, and the database's cores go to the other keys' calls
 * (`npm run bench:attacks -- --only e --store postgres://URL`: with 10, 2.0x and 2.2x; with 2, 1.6x and 1.8x).
 */
export const LANE_POOL = 2
/** Requests the lane holds at once; more of a heavy key are answered on the main thread. */
export const LANE_IN_FLIGHT = 256
/**
 * Bytes of bodies the lane's requests hold at once, each counted at its declared length (the
 * handler's body limit when it declares none); past it a request is answered on the main thread,
 * whose admission leaves it unread until its turn. The same as the handler's `maxInFlightBytes`.
 */
export const LANE_IN_FLIGHT_BYTES = 64 * 1024 * 1024

export interface HeavyLaneOptions {
  config: LaneConfig
  /** Server lines (the lane's start, its failures, its log when `logFormat` is not `none`). */
  log: (line: string) => void
  /** Milliseconds now, for requests' times (default `performance.now`). */
  now?: () => number
  /** Starts the lane's worker (default: `bin/lane-worker`); tests give their own. */
  start?: (config: LaneConfig) => Worker
  /**
   * The main thread's file store, which commits the writes of the lane (the lane is started with
   * `forwardWrites`, and takes bodies over `LANE_MAX_BODY_BYTES` too): one writer per process. A lane committing for itself held LMDB's one write lock until its own
   * busy event loop ran the commit, and every commit of the main thread (each read's audit entry)
   * waited for it.
   */
  commits?: { commitForwarded(write: ForwardedWrite): Promise<WriteResult> }
  /**
   * The main thread's memory store, which answers every store call of the lane (started with
   * `storeOnMain`; it takes bodies over `LANE_MAX_BODY_BYTES` too): the one copy of the data.
   */
  serves?: Store
}

/** One key's latest request times (ms, at most `MEAN_OF`, oldest first), and where its requests go now. */
interface KeyCost {
  times: number[]
  /** The mean of `times`, and the least of them. */
  mean: number
  least: number
  /** When its latest request was answered, or its first began (`ACTIVE_MS`). */
  seen: number
  heavy: boolean
  /** The key's requests since it went to the lane or was last probed (`PROBE_EVERY`). */
  sinceProbe: number
  /** Its requests from one probe to the next: `PROBE_EVERY`, doubled by each probe, at most `PROBE_MAX`. */
  probeEvery: number
  /**
   * While the key has no time yet, its first request, under way on the main thread: when it began
   * and the key's requests that came since, waiting for it. A new key's burst (96 large creates, 8
   * pages of large tokens) would otherwise all be answered on the main thread before any of them
   * placed the key, every other tenant waiting behind them: they wait until the first is answered
   * (its time places them) or has taken `HEAVY_MS` (the key goes to the lane, and they with it).
   */
  first?: { began: number; waiting: (() => void)[] } | undefined
}

/** An active key, and its time (`HeavyLane.standsOut`). */
interface Lowest {
  cost: KeyCost
  ms: number
}

/** The two active keys of the least times, and when they were looked for. */
interface LeastTimes {
  at: number
  first: Lowest | undefined
  second: Lowest | undefined
}

/**
 * The key of a request as the handler reads it: the first API key header present (any prefix the
 * server accepts), even empty; null without one. An empty first header is a key the handler
 * refuses, not a reason to read the next: a request with `SVC-API-KEY:` and a heavy key in
 * `BT-API-KEY` was answered 401 and charged to the heavy key, which it took off the lane.
 */
function apiKeyOf(req: IncomingMessage, prefix: string | undefined): string | null {
  for (const name of headerNames(headerPrefixes(prefix), 'API-KEY')) {
    const value = req.headers[name]
    if (value !== undefined) return Array.isArray(value) ? value.join(', ') : value
  }
  return null
}

/**
 * Bodies of more bytes than this (declared, or chunked) are answered on the main thread when the lane
 * commits its own writes (PostgreSQL). A lane committing to a file store held LMDB's one write
 * lock, shared by both threads, until its busy event loop had applied the write, and the main
 * thread's commits (every read's audit entry) waited for it; so on a file store the main thread's
 * store commits the lane's writes (`HeavyLaneOptions.commits`) and the lane takes such bodies too, as
 * it does on a memory store, whose every call the main thread answers (`HeavyLaneOptions.serves`).
 */
export const LANE_MAX_BODY_BYTES = 64 * 1024

const largeBody = (req: IncomingMessage) => {
  const length = req.headers['content-length']
  return length === undefined
    ? req.headers['transfer-encoding'] !== undefined
    : Number(length) > LANE_MAX_BODY_BYTES
}

/** Paths always answered on the main thread: document streams, the test control plane, the console. */
const mainOnly = (path: string) =>
  path.startsWith('/documents') || path.startsWith('/_test') || path.startsWith('/_console')

/** The 503 of a request the lane took and could not answer: its thread ended under it. */
const laneGone = () =>
  problem(503, 'The request was being served when its worker thread ended; it may be retried.', undefined, {
    'retry-after': '1',
  })

/** Starts the lane's worker: the compiled `lane-worker.js`, or `lane-worker.ts` through tsx in development. */
export function startLaneWorker(config: LaneConfig): Worker {
  // libuv's thread pool (fs, crypto, the log sink) is made by its first use, its threads taking the
  // niceness of the thread that used it: made here, by the main thread, before the lane lowers its own.
  stat(process.execPath, () => {})
  const options = { workerData: config, execArgv: [] }
  if (!import.meta.url.endsWith('.ts'))
    return new Worker(new URL('./lane-worker.js', import.meta.url), options)
  const worker = JSON.stringify(new URL('./lane-worker.ts', import.meta.url).href)
  const tsx = JSON.stringify(import.meta.resolve('tsx/esm/api'))
  const boot = `import(${tsx}).then((tsx) => { tsx.register(); return import(${worker}) })`
  return new Worker(boot, { ...options, eval: true })
}

/**
 * Routes each request with an API key to the main thread's listener or to the lane, by the key's
 * recent request times (`HEAVY_MS`, `LIGHT_MS`). The lane's thread starts with the first heavy key.
 * While it is starting, stopped or full, every request is answered on the main thread, as without
 * a lane; a request the lane held when its thread ended is answered 503 with `Retry-After: 1`.
 */
export class HeavyLane {
  readonly #o: HeavyLaneOptions
  readonly #now: () => number
  readonly #keys = new Map<string, KeyCost>()
  readonly #pending = new Map<number, { req: IncomingMessage; res: ServerResponse; bytes: number }>()
  /** The bytes of bodies of the requests in `#pending` (`LANE_IN_FLIGHT_BYTES`). */
  #bytes = 0
  #worker: Worker | undefined
  #ready = false
  #restarts = 0
  #next = 1
  #closing = false
  /** Requests answered by the lane so far. */
  served = 0
  /** Requests waiting for their key's first request, in all (`UNTIMED_WAITING`). */
  #untimedWaiting = 0
  /** The active keys of the least times, when last looked for (`LOWEST_KEPT_MS`). */
  #lowest: LeastTimes | undefined

  constructor(options: HeavyLaneOptions) {
    this.#o = options
    this.#now = options.now ?? (() => performance.now())
  }

  /** Whether the lane's thread is up and answering (it starts in the background). */
  get ready(): boolean {
    return this.#worker !== undefined && this.#ready
  }

  /** Whether `key`'s requests go to the lane now. */
  isHeavy(key: string): boolean {
    return this.#keys.get(digest(key))?.heavy === true
  }

  /** The listener: `local` answers on this thread, the lane the heavy keys' requests. */
  listener(local: NodeListener): NodeListener {
    return (req, res) => this.#route(req, res, local)
  }

  /** Starts the lane's thread now rather than with the first heavy key (it is ready a moment later). */
  start(): void {
    this.#lane()
  }

  /** Stops the lane's thread (its requests in flight are answered first by the server's drain). */
  async close(): Promise<void> {
    this.#closing = true
    const worker = this.#worker
    this.#worker = undefined
    if (worker) await worker.terminate()
  }

  #route(req: IncomingMessage, res: ServerResponse, local: NodeListener): void {
    const key = apiKeyOf(req, this.#o.config.headerPrefix)
    if (!key || mainOnly((req.url ?? '/').split('?')[0]!)) {
      local(req, res)
      return
    }
    const cost = this.#cost(digest(key))
    if (this.#waitsForFirst(cost, () => this.#route(req, res, local))) return
    const isFirst = !cost.heavy && cost.times.length === 0 && cost.first === undefined
    if (isFirst) {
      cost.first = { began: this.#now(), waiting: [] }
      cost.seen = cost.first.began
    }
    const probe = cost.heavy && ++cost.sinceProbe >= cost.probeEvery
    if (probe) {
      // The next probe's count, set now: the requests that come before this one's answer count to it.
      cost.sinceProbe = 0
      cost.probeEvery = Math.min(cost.probeEvery * 2, PROBE_MAX)
    }
    const started = this.#now()
    // Counted once its answer is handed to the socket (before the client has it: a next request
    // of the same client finds it counted), or once the connection closed without it.
    let counted = false
    const count = () => {
      if (counted) return
      counted = true
      // A key refused (401: unknown, revoked, expired) is never timed, and leaves the lane: the lane
      // reads a body before its key is checked, which the main thread never does for a refused key.
      if (res.statusCode === 401) this.#refused(cost)
      else this.#record(cost, this.#now() - started, probe)
      if (isFirst) this.#placed(cost)
    }
    res.once('finish', count).once('close', count)
    const bytes = this.#bodyBytes(req)
    const fits = (this.#writesHere() || !largeBody(req)) && this.#bytes + bytes <= LANE_IN_FLIGHT_BYTES
    if (cost.heavy && !probe && fits && this.#lane()) void this.#forward(req, res, bytes)
    else local(req, res)
  }

  /**
   * Whether a request of `cost`'s key waits for the key's first request (`KeyCost.first`): `route`
   * runs it once that one placed the key. A first that has already taken `HEAVY_MS` places the key
   * on the lane now.
   */
  #waitsForFirst(cost: KeyCost, route: () => void): boolean {
    const first = cost.first
    if (first === undefined) return false
    const ran = this.#now() - first.began
    if (ran >= HEAVY_MS && this.#standsOut(cost, ran)) {
      if (!cost.heavy) {
        cost.heavy = true
        cost.sinceProbe = 0
        cost.probeEvery = PROBE_EVERY
        this.#lane()
      }
      this.#placed(cost)
      return false
    }
    if (this.#untimedWaiting >= UNTIMED_WAITING) return false
    this.#untimedWaiting++
    first.waiting.push(route)
    return true
  }

  /** The key's first request placed it: the requests waiting for it are routed now, in order. */
  #placed(cost: KeyCost): void {
    const waiting = cost.first?.waiting ?? []
    cost.first = undefined
    this.#untimedWaiting -= waiting.length
    for (const route of waiting) route()
  }

  /** What a request's body counts toward `LANE_IN_FLIGHT_BYTES`: its declared length, else the body limit. */
  #bodyBytes(req: IncomingMessage): number {
    const length = req.headers['content-length']
    if (length !== undefined) return Number(length) || 0
    if (req.headers['transfer-encoding'] === undefined) return 0
    return this.#o.config.httpBounds['maxBodyBytes'] ?? DEFAULT_MAX_BODY_BYTES
  }

  /** Takes request `id` off the lane's count; what it was, or undefined when it was not there. */
  #release(id: number) {
    const at = this.#pending.get(id)
    if (!at) return undefined
    this.#pending.delete(id)
    this.#bytes -= at.bytes
    return at
  }

  /** The key's cost, made most recently seen; the least recently seen key forgotten past `MAX_KEYS`. */
  #cost(id: string): KeyCost {
    const cost = this.#keys.get(id) ?? {
      times: [],
      mean: 0,
      least: 0,
      seen: this.#now(),
      heavy: false,
      sinceProbe: 0,
      probeEvery: PROBE_EVERY,
    }
    this.#keys.delete(id)
    this.#keys.set(id, cost)
    if (this.#keys.size > MAX_KEYS) this.#keys.delete(this.#keys.keys().next().value!)
    return cost
  }

  /** A request of the key was refused 401: its times start over, on the main thread. */
  #refused(cost: KeyCost): void {
    cost.heavy = false
    cost.times = []
  }

  #record(cost: KeyCost, ms: number, probe: boolean): void {
    cost.seen = this.#now()
    // A probe answered on the main thread in less than HEAVY_MS: the key was slow on the lane only
    // because it shares it with heavy keys. It comes back, its times starting over.
    if (probe && ms < HEAVY_MS) {
      cost.heavy = false
      cost.times = [ms]
      cost.mean = ms
      cost.least = ms
      return
    }
    cost.times.push(ms)
    if (cost.times.length > MEAN_OF) cost.times.shift()
    let sum = 0
    let least = Number.POSITIVE_INFINITY
    for (const t of cost.times) {
      sum += t
      least = Math.min(least, t)
    }
    const mean = sum / cost.times.length
    cost.mean = mean
    cost.least = least
    const was = cost.heavy
    cost.heavy = was ? mean >= LIGHT_MS : mean >= HEAVY_MS && this.#standsOut(cost, mean)
    if (cost.heavy && !was) {
      cost.sinceProbe = 0
      cost.probeEvery = PROBE_EVERY
    }
    if (cost.heavy) this.#lane()
  }

  /**
   * Whether `ms`, a time of `cost`'s key, is at least `ALWAYS_HEAVY_MS`, or `STANDS_OUT` times the
   * least time of the other keys active in the last `ACTIVE_MS` (true when none is).
   */
  #standsOut(cost: KeyCost, ms: number): boolean {
    if (ms >= ALWAYS_HEAVY_MS) return true
    const now = this.#now()
    if (this.#lowest === undefined || now - this.#lowest.at >= LOWEST_KEPT_MS)
      this.#lowest = this.#findLowest(now)
    const { first, second } = this.#lowest
    const other = first?.cost === cost ? second : first
    return other === undefined || ms >= STANDS_OUT * other.ms
  }

  /** The two active keys of the least times now (a first request under way counts with its time so far). */
  #findLowest(now: number): LeastTimes {
    let first: Lowest | undefined
    let second: Lowest | undefined
    for (const cost of this.#keys.values()) {
      if (now - cost.seen >= ACTIVE_MS) continue
      const ms = cost.first ? Math.max(cost.least, now - cost.first.began) : cost.least
      if (cost.first === undefined && cost.times.length === 0) continue
      if (first === undefined || ms < first.ms) {
        second = first
        first = { cost, ms }
      } else if (second === undefined || ms < second.ms) second = { cost, ms }
    }
    return { at: now, first, second }
  }

  /** Whether this thread's store writes for the lane (file, memory): the lane then takes large bodies too. */
  #writesHere(): boolean {
    return this.#o.commits !== undefined || this.#o.serves !== undefined
  }

  /** Whether the lane can take a request now; starts its thread when there is none (and may be). */
  #lane(): boolean {
    if (this.#worker) return this.#ready && this.#pending.size < LANE_IN_FLIGHT
    if (this.#closing || this.#restarts > LANE_RESTARTS) return false
    this.#startWorker()
    return false
  }

  #startWorker(): void {
    const forwardWrites = this.#o.commits !== undefined
    const storeOnMain = this.#o.serves !== undefined
    const worker = (this.#o.start ?? startLaneWorker)({ ...this.#o.config, forwardWrites, storeOnMain })
    this.#worker = worker
    this.#ready = false
    worker.unref()
    worker.on('message', (m: FromLane) => this.#message(worker, m))
    worker.on('error', (error) => this.#o.log(`heavy lane: its thread failed: ${String(error)}`))
    worker.on('exit', () => this.#ended(worker))
  }

  #message(worker: Worker, m: FromLane): void {
    if ('store' in m) this.#call(worker, m.store)
    else if ('write' in m) this.#commit(worker, m.write.id, m.write.write)
    else if ('ready' in m) {
      this.#ready = true
      this.#o.log('heavy lane: started (a thread of its own serves the keys whose requests are slow)')
    } else if ('log' in m) this.#o.log(m.log)
    else if ('failed' in m) this.#o.log(`heavy lane: could not start: ${m.failed}`)
    else this.#answer(m.answer)
  }

  /** Commits a write of the lane in the main thread's store and tells the lane how it ended. */
  #commit(worker: Worker, id: number, write: ForwardedWrite): void {
    const commits = this.#o.commits
    const done = commits
      ? commits.commitForwarded(write)
      : Promise.reject(new Error('heavy lane: no store commits its writes'))
    void forwardedResult(done).then((answer) => {
      const reply: ToLane = { wrote: id, answer }
      // A thread that ended meanwhile is not told: what it held was answered 503.
      if (this.#worker === worker) worker.postMessage(reply)
    })
  }

  /** Answers the store calls of one message of the lane with the store this thread holds (`HeavyLaneOptions.serves`). */
  #call(worker: Worker, calls: StoreCall[]): void {
    const store = this.#o.serves
    const none = (call: StoreCall): StoreReply => ({
      id: call.id,
      error: { message: 'heavy lane: no store answers its calls' },
    })
    const done = store ? answerStoreCalls(store, calls) : Promise.resolve(calls.map(none))
    void done.then((stored) => {
      // A thread that ended meanwhile is not told: what it held was answered 503.
      if (this.#worker !== worker) return
      try {
        worker.postMessage({ stored } satisfies ToLane)
      } catch {
        // An answer postMessage can't copy fails its own call, not the others of its message.
        for (const reply of stored) this.#postReply(worker, reply)
      }
    })
  }

  #postReply(worker: Worker, reply: StoreReply): void {
    try {
      worker.postMessage({ stored: [reply] } satisfies ToLane)
    } catch (error) {
      worker.postMessage({ stored: [{ id: reply.id, error: { message: String(error) } }] } satisfies ToLane)
    }
  }

  #answer(a: LaneAnswer): void {
    const at = this.#release(a.id)
    if (!at) return
    this.served++
    const body = a.body === null ? null : Buffer.from(a.body.buffer, a.body.byteOffset, a.body.byteLength)
    try {
      writeOutgoing(at.req, at.res, { ...a, body })
    } catch {
      // An answer the socket can't take ends its connection, never the process (a message listener's throw would).
      at.res.destroy()
    }
  }

  /** The lane's thread ended: what it held is answered 503, and it may be started again. */
  #ended(worker: Worker): void {
    if (this.#worker !== worker) return
    this.#worker = undefined
    this.#ready = false
    for (const { req, res } of this.#pending.values()) writeOutgoing(req, res, laneGone())
    this.#pending.clear()
    this.#bytes = 0
    if (this.#closing) return
    this.#restarts++
    this.#o.log(
      this.#restarts > LANE_RESTARTS
        ? `heavy lane: its thread ended ${this.#restarts} times; every request is answered on the main thread from now on`
        : 'heavy lane: its thread ended; it starts again with the next heavy key',
    )
  }

  /** Reads the body (at most `LANE_MAX_BODY_BYTES`, declared) on this thread and posts the request. */
  async #forward(req: IncomingMessage, res: ServerResponse, bytes: number): Promise<void> {
    const max = this.#o.config.httpBounds['maxBodyBytes'] ?? DEFAULT_MAX_BODY_BYTES
    const id = this.#next++
    this.#pending.set(id, { req, res, bytes })
    this.#bytes += bytes
    const read = await readNodeChunks(req, max, res)
    const worker = this.#worker
    if (!worker || !this.#pending.has(id)) {
      if (this.#release(id)) writeOutgoing(req, res, laneGone())
      return
    }
    // Each chunk is moved as it is (a socket's fills a buffer of its own): a copy of a large body is
    // one more buffer outside V8's heap, bringing this thread's next full collection nearer.
    const body = Array.isArray(read) ? read.map(movable) : null
    const message: LaneRequest = {
      id,
      method: req.method ?? 'GET',
      target: req.url ?? '/',
      headers: nodeHeaders(req),
      body,
      read: read === TOO_LARGE ? 'too large' : read === UNREADABLE ? 'unreadable' : 'whole',
    }
    worker.postMessage(message, body ? body.map((chunk) => chunk.buffer as ArrayBuffer) : [])
  }
}

/** A key's digest: the lane remembers keys by it, never as they are. */
const digest = (key: string) => createHash('sha256').update(key).digest('base64')
