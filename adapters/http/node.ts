import { type IncomingMessage, type ServerResponse, validateHeaderName, validateHeaderValue } from 'node:http'
import { nextTurn } from '../../src/kernel/index.js'
import { type Incoming, type Outgoing, TOO_LARGE, UNREADABLE } from './exchange.js'
import { exchangeHandlerOf, giveBodyReader, untouchedBody } from './handler.js'
import { bridgedRequest, realResponse, untouchedAnswer } from './light.js'
import { problem } from './problem.js'

/** A node:http request listener, as `http.createServer` and Express take it. */
export type NodeListener = (req: IncomingMessage, res: ServerResponse) => void

/** Whether a node request carries a body (chunked, or a non-zero `Content-Length`). */
const hasBody = (req: IncomingMessage) =>
  req.headers['transfer-encoding'] !== undefined ||
  (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0')

/**
 * Reads a node request's body, at most `maxBytes`. Past the limit it stops listening and pauses the
 * request (the connection is then closed after the answer) rather than buffering the rest. A
 * request that asked `Expect: 100-continue` is told to go on now, when its body is wanted (with
 * `res`: a server that defers the 100, as `serve`'s does, so a refused key never invites the body).
 */
export async function readNodeBody(
  req: IncomingMessage,
  maxBytes: number,
  res?: ServerResponse,
): Promise<Uint8Array | null | typeof TOO_LARGE | typeof UNREADABLE> {
  const read = await readNodeChunks(req, maxBytes, res)
  if (!Array.isArray(read)) return read
  return read.length === 1 ? read[0]! : Buffer.concat(read)
}

/**
 * `readNodeBody`'s chunks as the socket gave them, never joined (null for no body or an empty
 * one): what the heavy lane moves to its thread, which joins them there. Each chunk of a socket
 * fills an `ArrayBuffer` of its own; a buffer of the body's size made here would cost this thread
 * its fresh pages (about 1.2 ms for 400 KB on a 2-vCPU machine).
 */
export function readNodeChunks(
  req: IncomingMessage,
  maxBytes: number,
  res?: ServerResponse,
): Promise<Buffer[] | null | typeof TOO_LARGE | typeof UNREADABLE> {
  if (!hasBody(req) || req.readableEnded) return Promise.resolve(null)
  // Gone before its turn came (a request waits unread for admission): no event will come any more.
  if (req.destroyed) return Promise.resolve(UNREADABLE)
  if (res && expectsContinue(req) && !(res as { _sent100?: boolean })._sent100 && !res.headersSent)
    res.writeContinue()
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    let total = 0
    const finish = (result: Buffer[] | null | typeof TOO_LARGE | typeof UNREADABLE) => {
      req.off('data', onData).off('end', onEnd).off('close', onClose).off('error', onClose)
      resolve(result)
    }
    const onData = (chunk: Buffer) => {
      total += chunk.byteLength
      if (total > maxBytes) {
        req.pause()
        finish(TOO_LARGE)
      } else chunks.push(chunk)
    }
    const onEnd = () => finish(total === 0 ? null : chunks)
    const onClose = () => finish(UNREADABLE)
    req.on('data', onData).on('end', onEnd).on('close', onClose).on('error', onClose)
  })
}

/**
 * The body a framework already read and parsed (`req.body` set by Express's `express.json()` or
 * assigned from Fastify's `request.body`), as bytes again: JSON for a parsed value, the text or
 * buffer as is. `undefined` when no framework consumed the body (then the stream is read).
 */
function parsedBody(req: IncomingMessage): Uint8Array | null | undefined {
  const body = (req as IncomingMessage & { body?: unknown }).body
  if (body === undefined || !req.readableEnded) return undefined
  if (body instanceof Uint8Array) return body.byteLength === 0 ? null : body
  if (typeof body === 'string') return body === '' ? null : Buffer.from(body)
  return Buffer.from(JSON.stringify(body))
}

/**
 * The prefix a framework stripped from `req.url` (Express keeps the whole target in
 * `req.originalUrl`): what precedes the path of `req.url` in the original path; `''` when none.
 */
function mountOf(req: IncomingMessage): string {
  const original = (req as IncomingMessage & { originalUrl?: unknown }).originalUrl
  if (typeof original !== 'string') return ''
  const path = (req.url ?? '/').split('?')[0]!
  const full = original.split('?')[0]!
  if (full === path || !full.endsWith(path)) return ''
  const mount = full.slice(0, full.length - path.length).replace(/\/+$/, '')
  return /^(\/[A-Za-z0-9._~%!$&'()*+,;=:@-]+)+$/.test(mount) ? mount : ''
}

/** Every header of a node request, lower-case names, repeated ones joined by `, `. */
export function nodeHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(req.headers))
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value
  return out
}

/**
 * A signal that aborts when `res`'s connection closes before `res` is finished: the client is gone.
 * Its listener goes once the answer is written, so a kept connection gathers none.
 */
function goneSignal(res: ServerResponse): AbortSignal {
  const controller = new AbortController()
  const onClose = () => {
    if (!res.writableFinished) controller.abort()
  }
  res.once('close', onClose)
  return controller.signal
}

/** Whether a request waits for `100 Continue` before it sends its body. */
const expectsContinue = (req: IncomingMessage) => req.headers.expect?.toLowerCase() === '100-continue'

/** The exchange view of a node request: no WHATWG objects, no copies of the body. */
function fromNode(req: IncomingMessage, res?: ServerResponse): Incoming {
  let signal: AbortSignal | undefined
  return {
    ...(res ? { signal: () => (signal ??= goneSignal(res)) } : {}),
    method: req.method ?? 'GET',
    target: req.url ?? '/',
    header(name) {
      const value = req.headers[name]
      return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value
    },
    mount: () => mountOf(req),
    headers: () => nodeHeaders(req),
    hasBody: () => hasBody(req),
    gone: () => req.socket?.destroyed === true,
    readBody(maxBytes) {
      if (!hasBody(req)) return Promise.resolve(null)
      const parsed = parsedBody(req)
      if (parsed === undefined) return readNodeBody(req, maxBytes, res)
      return Promise.resolve(parsed !== null && parsed.byteLength > maxBytes ? TOO_LARGE : parsed)
    },
  }
}

/** How long, and for how many more bytes, a connection closed before its request was read whole lingers. */
const LINGER_MS = 2_000
const LINGER_BYTES = 4 * 1024 * 1024

/**
 * A connection whose request was not read whole (a 413, a refusal before the body) is closed after
 * its answer as a lingering close: the answer and a FIN go out, and what the client still sends is
 * read and dropped until it closes too — at most `LINGER_MS` and `LINGER_BYTES` — before the socket
 * is destroyed. Destroyed at once, the socket's unread bytes made the kernel answer them with a
 * reset, which on a busy machine reached the client before it read the answer: it saw
 * ECONNRESET, not its 413.
 */
function lingerOnClose(req: IncomingMessage): void {
  const socket = req.socket as (typeof req.socket & { lingers?: true }) | null
  if (!socket || socket.lingers) return
  socket.lingers = true
  socket.destroySoon = function lingering(this: typeof socket) {
    if (this.writable) this.end()
    let left = LINGER_BYTES
    const timer = setTimeout(() => this.destroy(), LINGER_MS)
    timer.unref()
    this.once('close', () => clearTimeout(timer))
    this.on('data', (chunk: Buffer) => {
      left -= chunk.byteLength
      if (left < 0) this.destroy()
    })
    this.once('end', () => this.destroy())
    req.resume()
    this.resume()
  }
}

export function writeOutgoing(req: IncomingMessage, res: ServerResponse, out: Outgoing): void {
  if (!req.complete) lingerOnClose(req)
  const headers: Record<string, string | number | string[]> = out.headers
  if (out.cookies?.length) headers['set-cookie'] = cookiesOf(out)
  if (out.body instanceof ReadableStream) {
    if (!req.complete) headers.connection = 'close'
    writeHead(res, out.status, headers)
    void writeStream(res, out.body)
    return
  }
  if (out.body !== null) headers['content-length'] = Buffer.byteLength(out.body)
  if (!req.complete) headers.connection = 'close'
  writeHead(res, out.status, headers)
  if (out.body !== null && out.body.length > LARGE_ANSWER_BYTES) {
    void writeInTurns(res, typeof out.body === 'string' ? Buffer.from(out.body) : asBuffer(out.body))
    return
  }
  res.end(out.body ?? undefined)
}

/** The answer's `Set-Cookie` values: a `set-cookie` of its headers, then each of `cookies`. */
export const cookiesOf = (out: Outgoing): string[] => [
  ...(out.headers['set-cookie'] === undefined ? [] : [out.headers['set-cookie']]),
  ...(out.cookies ?? []),
]

/** Headers Node frames an answer with itself, or refuses beside a length: never taken from an answer. */
const FRAMING = new Set(['transfer-encoding', 'trailer', 'keep-alive', 'upgrade', 'te'])

/**
 * `res.writeHead`, and when Node refuses the headers (a name or value HTTP can't carry, a `trailer`
 * on an answer with a length), again without every header it refuses: what an answer says about its
 * own framing is Node's to write. A header that came that far is a defect of whoever made it (the
 * proxy and transforms drop them); the process and the connection must outlive it either way.
 */
function writeHead(
  res: ServerResponse,
  status: number,
  headers: Record<string, string | number | string[]> | string[],
): ServerResponse {
  try {
    return res.writeHead(status, headers)
  } catch {
    for (const name of res.getHeaderNames()) res.removeHeader(name)
    const pairs = Array.isArray(headers)
      ? headers
      : Object.entries(headers).flatMap(([name, v]) =>
          Array.isArray(v) ? v.flatMap((one) => [name, one]) : [name, v],
        )
    const kept: string[] = []
    for (let i = 0; i + 1 < pairs.length; i += 2) {
      const [name, value] = [String(pairs[i]), String(pairs[i + 1])]
      if (FRAMING.has(name.toLowerCase())) continue
      try {
        validateHeaderName(name)
        validateHeaderValue(name, value)
        kept.push(name, value)
      } catch {}
    }
    return res.writeHead(status, kept)
  }
}

/** `bytes` as a `Buffer` over the same memory: no copy of a large answer. */
const asBuffer = (bytes: Uint8Array) =>
  Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)

/**
 * Answers longer than this are written in pieces of this many bytes, a turn of the event loop
 * (`nextTurn`) between two: writing 400 KB to a socket at once took about 2 ms, which every
 * other tenant's request then waited behind (`npm run bench:attacks`, attack (a)).
 */
const LARGE_ANSWER_BYTES = 64 * 1024

/**
 * Writes a streamed body as it is read (a chunk at a time, waiting for the socket to drain), and
 * ends it; a stream that fails midway (a chunk that can't be read) or a socket gone destroys the
 * answer, so the client sees it cut rather than complete.
 */
async function writeStream(res: ServerResponse, body: ReadableStream<Uint8Array>): Promise<void> {
  const reader = body.getReader()
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      if (res.destroyed) {
        await reader.cancel()
        return
      }
      // Both listeners go once either fires: a long answer's waits add none that stay.
      if (!res.write(value)) await drained(res)
    }
    res.end()
  } catch {
    res.destroy()
    // A stream left unread is cancelled, so what it holds (a paced answer's admission) ends.
    await reader.cancel().catch(() => {})
  }
}

/** Writes `bytes` as the answer's body, `LARGE_ANSWER_BYTES` a turn (or a drain), and ends it; stops if the socket is gone. */
async function writeInTurns(res: ServerResponse, bytes: Buffer): Promise<void> {
  for (let at = 0; at < bytes.length; at += LARGE_ANSWER_BYTES) {
    if (res.destroyed) return
    const piece = bytes.subarray(at, at + LARGE_ANSWER_BYTES)
    if (at + LARGE_ANSWER_BYTES >= bytes.length) {
      res.end(piece)
      return
    }
    // A piece the socket did not take at once waits for it to drain: pieces never pile up to be
    // written in one call of many megabytes (a page of large tokens) that others would wait behind.
    if (res.write(piece)) await nextTurn()
    else await drained(res)
  }
}

/** A `Host` header that can only name a host and port (anything else is replaced by `localhost`). */
const PLAIN_HOST = /^[A-Za-z0-9.:[\]-]+$/

/** The absolute URL of a node request: its target against `http://` and its `Host`. */
function requestUrl(req: IncomingMessage): string {
  const target = req.url ?? '/'
  const host = req.headers.host
  const origin = `http://${host !== undefined && PLAIN_HOST.test(host) ? host : 'localhost'}`
  // An origin-form target (the usual case) is appended as is; any other is resolved as a URL.
  if (target.charCodeAt(0) === 47 && target.charCodeAt(1) !== 47) return `${origin}${target}`
  try {
    return new URL(target, origin).href
  } catch {
    return `${origin}/`
  }
}

/**
 * A fetch `Request` for any node request: headers as sent, the body streamed (pausing, never
 * dropping the socket). It is a stand-in (`./light.ts`) that builds the real `Request` only once
 * something reads more than its method and URL; a handler of this package that gets it untouched
 * serves the node request's exchange as the native path does. The real one's stream listens to the
 * node request only once something reads it (its high-water mark is 0: nothing is pulled ahead), so
 * a handler of this package reads the body straight from the node request while the stream is
 * untouched (`giveBodyReader`); the stream then has nothing left and fails if read.
 */
function toRequest(req: IncomingMessage): Request {
  const method = req.method ?? 'GET'
  let listening = false
  let taken = false
  const node = fromNode(req)
  const incoming: Incoming = {
    ...node,
    readBody(maxBytes) {
      if (listening) return Promise.resolve(UNREADABLE)
      taken = true
      return node.readBody(maxBytes)
    },
  }
  const make = () => {
    const headers: [string, string][] = []
    const raw = req.rawHeaders
    for (let i = 0; i < raw.length; i += 2) headers.push([raw[i]!, raw[i + 1]!])
    const url = requestUrl(req)
    if (method === 'GET' || method === 'HEAD' || !hasBody(req)) return new Request(url, { method, headers })
    const body = new ReadableStream<Uint8Array>(
      {
        pull(controller) {
          if (taken) return controller.error(new TypeError('the request body was already read'))
          if (!listening) {
            listening = true
            req.on('data', (chunk: Buffer) => {
              controller.enqueue(chunk)
              if ((controller.desiredSize ?? 0) <= 0) req.pause()
            })
            req.on('end', () => controller.close())
            req.on('error', (error) => controller.error(error))
          }
          req.resume()
        },
        cancel: () => void req.pause().removeAllListeners('data'),
      },
      { highWaterMark: 0 },
    )
    const request = new Request(url, { method, headers, body, duplex: 'half' } as RequestInit)
    giveBodyReader(request, incoming.readBody)
    return request
  }
  return bridgedRequest(method, () => requestUrl(req), make, incoming)
}

/** Resolves once `res` can take more data, or has closed. */
const drained = (res: ServerResponse) =>
  new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done).off('close', done)
      resolve()
    }
    res.on('drain', done).on('close', done)
  })

/**
 * Writes a fetch `Response` to node: status, headers (cookies one by one), then the body. A body
 * of one chunk (what most handlers answer) goes out with the head in one write, with its
 * `Content-Length`; a longer one is streamed, waiting for the socket to drain.
 */
async function writeResponse(req: IncomingMessage, res: ServerResponse, given: Response): Promise<void> {
  const answer = untouchedAnswer(given)
  // A stand-in of this package that nothing made real: its answer, written as the native path does.
  if (answer !== undefined) return writeOutgoing(req, res, answer)
  const response = realResponse(given)
  const headers: string[] = []
  let sized = false
  for (const [name, value] of response.headers) {
    if (name === 'set-cookie') continue
    if (name === 'content-length' || name === 'transfer-encoding') sized = true
    headers.push(name, value)
  }
  for (const cookie of response.headers.getSetCookie()) headers.push('set-cookie', cookie)
  if (!req.complete) headers.push('connection', 'close')
  if (response.body === null) {
    writeHead(res, response.status, headers).end()
    return
  }
  // A handler of this package made it and nothing read it: its bytes are known.
  const known = untouchedBody(response)
  if (known !== undefined) {
    if (!sized && response.status !== 204 && response.status !== 304)
      headers.push('content-length', String(known.byteLength))
    writeHead(res, response.status, headers).end(known)
    return
  }
  const reader = response.body.getReader()
  const first = await reader.read()
  const next = first.done ? first : await reader.read()
  if (next.done) {
    const body = first.done ? undefined : first.value
    const status = response.status
    if (!sized && status !== 204 && status !== 304)
      headers.push('content-length', String(body?.byteLength ?? 0))
    writeHead(res, status, headers).end(body)
    return
  }
  writeHead(res, response.status, headers)
  let chunk: Awaited<ReturnType<typeof reader.read>> = next
  if (!res.write(first.value!)) await drained(res)
  while (!chunk.done && !res.destroyed) {
    if (!res.write(chunk.value)) await drained(res)
    chunk = await reader.read()
  }
  if (res.destroyed) await reader.cancel().catch(() => {})
  else res.end()
}

/**
 * Serves a fetch handler on node:http: `http.createServer(toNodeListener(handler))`. For a handler
 * made by `createHttpHandler` it skips the WHATWG `Request`/`Response` objects and serves the same
 * exchange straight from the node request; any other handler gets a `Request` streaming the body
 * and its `Response` written back (a handler may answer one at once, as Hono's `app.fetch` may).
 * A request whose body was not read to the end closes its connection.
 * A body a framework already parsed (`req.body` with the stream consumed: Express's
 * `express.json()`, or Fastify's `request.body` assigned to `request.raw.body`) is used as given.
 */
export function toNodeListener(handler: (request: Request) => Response | Promise<Response>): NodeListener {
  const exchange = exchangeHandlerOf(handler)
  return (req, res) => {
    const done = exchange
      ? exchange(fromNode(req, res)).then((out) => writeOutgoing(req, res, out))
      : Promise.resolve()
          .then(() => handler(toRequest(req)))
          .then((response) => writeResponse(req, res, response))
    done.catch((error: unknown) => {
      console.error('tokenvault: the node listener failed', error)
      if (res.headersSent) return void res.destroy()
      // Headers set before the failure (a length among them) would frame the next answer wrong.
      for (const name of res.getHeaderNames()) res.removeHeader(name)
      res.writeHead(500, { connection: 'close' }).end()
    })
  }
}

/** An Express-style error middleware: `(error, req, res, next)`. */
export type NodeErrorListener = (
  error: unknown,
  req: IncomingMessage,
  res: ServerResponse,
  next: (error?: unknown) => void,
) => void

/**
 * For a vault mounted after `express.json()` (body-parser): an Express error middleware that lets
 * the vault answer the bodies the parser refused, as problems rather than the framework's HTML
 * page. Mount it beside the listener: `app.use('/vault', toNodeListener(h), toNodeErrorListener(h))`.
 *
 * - Bad JSON (`entity.parse.failed`): the parser kept the text on the error; the vault reads it and
 *   answers as it answers any bad body (400 problem).
 * - Too large for the parser (`entity.too.large`): the body was not kept, so the answer is a 413
 *   problem naming the parser's limit (mount the vault before `express.json()`, or raise `limit`).
 * - An unsupported charset or encoding: a 415 problem.
 *
 * Any other error goes on to `next`.
 */
export function toNodeErrorListener(
  handler: (request: Request) => Response | Promise<Response>,
): NodeErrorListener {
  const listener = toNodeListener(handler)
  return (error, req, res, next) => {
    const e = (typeof error === 'object' && error !== null ? error : {}) as {
      type?: unknown
      body?: unknown
      limit?: unknown
    }
    if (e.type === 'entity.parse.failed' && typeof e.body === 'string') {
      ;(req as IncomingMessage & { body?: unknown }).body = e.body
      listener(req, res)
      return
    }
    if (e.type === 'entity.too.large') {
      const limit = typeof e.limit === 'number' ? `${e.limit} bytes` : 'its limit'
      const detail = `The request body is larger than the body parser's limit (${limit}) in front of the vault; mount the vault before express.json() or raise its limit.`
      writeOutgoing(req, res, problem(413, detail, undefined, { connection: 'close' }))
      return
    }
    if (e.type === 'charset.unsupported' || e.type === 'encoding.unsupported') {
      writeOutgoing(
        req,
        res,
        problem(415, 'The request body has a charset or encoding the vault does not read.'),
      )
      return
    }
    next(error)
  }
}
