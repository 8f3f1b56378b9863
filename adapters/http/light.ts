/**
 * Stand-ins for the WHATWG `Request` and `Response` on the node:http bridge (`toNodeListener`),
 * made only once something reads them.
 *
 * A fetch handler the bridge does not know gets a `Request`, and its `Response` is written back to
 * node. Building both costs more than the vault's own work on a read (on Node 20 4–9 µs for the
 * `Request`, with its URL, headers and abort signal, and 13–19 µs for a `Response` with a body,
 * which becomes a stream at once). A stand-in is an object whose prototype is the web class's: it is
 * `instanceof Request` (or `Response`) and answers every member, cheap ones (a request's method and
 * URL, a response's status) itself and every other by building the real object once and reading it.
 * A handler of this package that gets an untouched stand-in reads the exchange straight from the node
 * request, and answers a stand-in `Response` the bridge writes without building it; anything in
 * between that looks further (headers, body, `clone()`) gets the real objects, so it sees what it
 * would have seen without stand-ins.
 *
 * The real objects keep their state under symbol keys on this Node (undici), which
 * `new Request(standIn)` and `fetch(standIn)` read: a stand-in forwards those too. Whether that
 * works is checked once, on a probe, before the first stand-in `Request` is made; where it does not
 * (a runtime keeping the state in private fields), the bridge makes real `Request`s as before.
 */
import type { Incoming, Outgoing } from './exchange.js'

/** The method a stand-in builds its real object with (a symbol: no web member can collide with it). */
const REAL = Symbol('real')

/**
 * Defines on `proto` every member of `web.prototype` that `proto` lacks, and the symbol-keyed slots
 * of `samples`, each reading (or writing) the real object `proto[REAL]()` builds.
 */
function forwardTo(proto: object, web: { prototype: object }, samples: readonly object[]): void {
  const own = new Set<PropertyKey>(Reflect.ownKeys(proto))
  // `new standIn.constructor(…)` makes a real one.
  Object.defineProperty(proto, 'constructor', { value: web, writable: true, configurable: true })
  for (const name of Object.getOwnPropertyNames(web.prototype)) {
    if (own.has(name)) continue
    const found = Object.getOwnPropertyDescriptor(web.prototype, name)!
    if (found.get) {
      Object.defineProperty(proto, name, {
        get(this: Stand) {
          return (this[REAL]() as unknown as Record<string, unknown>)[name]
        },
        configurable: true,
      })
    } else if (typeof found.value === 'function') {
      Object.defineProperty(proto, name, {
        value(this: Stand, ...args: unknown[]) {
          const real = this[REAL]() as unknown as Record<string, (...a: unknown[]) => unknown>
          return real[name]!(...args)
        },
        writable: true,
        configurable: true,
      })
    }
  }
  const slots = new Set(samples.flatMap((sample) => Object.getOwnPropertySymbols(sample)))
  for (const slot of slots) {
    Object.defineProperty(proto, slot, {
      get(this: Stand) {
        return (this[REAL]() as unknown as Record<symbol, unknown>)[slot]
      },
      set(this: Stand, value: unknown) {
        ;(this[REAL]() as unknown as Record<symbol, unknown>)[slot] = value
      },
      configurable: true,
    })
  }
  Object.setPrototypeOf(proto, web.prototype)
}

interface Stand {
  [REAL](): object
}

/**
 * A stand-in's own state sits under this symbol rather than in private fields, so that a `Proxy` a
 * host wraps around a stand-in (as it may around a real `Request`) forwards to it: a private field
 * read through a proxy throws.
 */
const STATE = Symbol('state')

/** A `Request` from node: its method and URL at hand, the real one built on first need. */
class StandInRequest {
  readonly [STATE]: {
    readonly method: string
    readonly url: () => string
    urlText: string | undefined
    readonly make: () => Request
    real: Request | undefined
    /** The exchange view of the node request, while nothing has built the real `Request`. */
    readonly incoming: Incoming
  }

  constructor(method: string, url: () => string, make: () => Request, incoming: Incoming) {
    this[STATE] = { method, url, urlText: undefined, make, real: undefined, incoming }
  }

  get method(): string {
    return this[STATE].method
  }

  get url(): string {
    const state = this[STATE]
    state.urlText ??= state.url()
    return state.urlText
  }

  [REAL](): Request {
    const state = this[STATE]
    state.real ??= state.make()
    return state.real
  }

  /** The exchange view while the real `Request` was never built; `undefined` after. */
  static incomingOf(request: StandInRequest): Incoming | undefined {
    const state = request[STATE]
    return state.real === undefined ? state.incoming : undefined
  }
}

/** A `Response` a handler of this package answered: status at hand, the real one built on first need. */
class StandInResponse {
  readonly [STATE]: { readonly out: Outgoing; readonly make: () => Response; real: Response | undefined }

  constructor(out: Outgoing, make: () => Response) {
    this[STATE] = { out, make, real: undefined }
  }

  get status(): number {
    return this[STATE].out.status
  }

  get ok(): boolean {
    const { status } = this[STATE].out
    return status >= 200 && status <= 299
  }

  [REAL](): Response {
    const state = this[STATE]
    state.real ??= state.make()
    return state.real
  }

  /** The answer as given while the real `Response` was never built; `undefined` after. */
  static answerOf(response: StandInResponse): Outgoing | undefined {
    const state = response[STATE]
    return state.real === undefined ? state.out : undefined
  }

  /** The real `Response`, built now if it was not. */
  static realOf(response: StandInResponse): Response {
    return response[REAL]()
  }
}

forwardTo(StandInRequest.prototype, Request, [
  new Request('http://localhost/', { method: 'POST', body: '', duplex: 'half' } as RequestInit),
])
forwardTo(StandInResponse.prototype, Response, [new Response('')])

/** Requests the bridge made real because stand-ins do not work here: still answered with stand-ins. */
const bridgedRequests = new WeakSet<Request>()

let standInsWork: boolean | undefined

/**
 * Whether a stand-in `Request` passes for a real one where the runtime looks inside it: copied
 * with `new Request(standIn, init)`, cloned, its headers and body read from the copies.
 */
function probeStandIns(): boolean {
  try {
    const url = 'http://localhost/probe?x=1'
    const make = () =>
      new Request(url, {
        method: 'POST',
        headers: { 'x-probe': '1' },
        body: 'probe',
        duplex: 'half',
      } as RequestInit)
    const noBody: Incoming = { method: 'POST', target: url, header: () => null, readBody: async () => null }
    const first = new StandInRequest('POST', () => url, make, noBody) as unknown as Request
    const clone = first.clone()
    const second = new StandInRequest('POST', () => url, make, noBody) as unknown as Request
    const copy = new Request(second, { headers: { 'x-probe': '2' } })
    return (
      clone.method === 'POST' &&
      clone.url === url &&
      clone.headers.get('x-probe') === '1' &&
      clone.body !== null &&
      copy.method === 'POST' &&
      copy.url === url &&
      copy.headers.get('x-probe') === '2' &&
      copy.body !== null
    )
  } catch {
    return false
  }
}

/**
 * The `Request` the bridge hands a fetch handler: a stand-in where stand-ins work (see the module's
 * note), else `make()`. Either way a handler of this package answers it with a stand-in `Response`.
 */
export function bridgedRequest(
  method: string,
  url: () => string,
  make: () => Request,
  incoming: Incoming,
): Request {
  standInsWork ??= probeStandIns()
  if (standInsWork) return new StandInRequest(method, url, make, incoming) as unknown as Request
  const request = make()
  bridgedRequests.add(request)
  return request
}

/** Whether `request` came from the bridge (so its `Response` goes back to the bridge). */
export function isBridged(request: Request): boolean {
  return (request as unknown) instanceof StandInRequest || bridgedRequests.has(request)
}

/** The node request's exchange view behind a stand-in nothing has made real; else `undefined`. */
export function bridgedIncoming(request: Request): Incoming | undefined {
  return (request as unknown) instanceof StandInRequest
    ? StandInRequest.incomingOf(request as unknown as StandInRequest)
    : undefined
}

/** A stand-in `Response` for `answer`; `make` builds the real one if anything reads further. */
export function standInResponse(answer: Outgoing, make: () => Response): Response {
  return new StandInResponse(answer, make) as unknown as Response
}

/** The answer behind a stand-in `Response` nothing has made real; else `undefined`. */
export function untouchedAnswer(response: Response): Outgoing | undefined {
  return (response as unknown) instanceof StandInResponse
    ? StandInResponse.answerOf(response as unknown as StandInResponse)
    : undefined
}

/** The `Response` that holds the truth: the real one behind a stand-in (made now if need be), else `response`. */
export function realResponse(response: Response): Response {
  return (response as unknown) instanceof StandInResponse
    ? StandInResponse.realOf(response as unknown as StandInResponse)
    : response
}
