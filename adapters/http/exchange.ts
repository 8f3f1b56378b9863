/**
 * The transport-neutral shape of one HTTP exchange. The handler works on these, so a WHATWG
 * `Request` and a node:http `IncomingMessage` both reach it without being converted into each other.
 */

/** Answer of `Incoming.readBody` once the body grew past the limit; reading has stopped by then. */
export const TOO_LARGE = Symbol('too large')

/** Answer of `Incoming.readBody` when the body could not be received (the client went away, a stream failed). */
export const UNREADABLE = Symbol('unreadable')

/** What the handler needs of a request. */
export interface Incoming {
  /** The method, upper case. */
  method: string
  /** The request target: path and query (`/tokens/abc?x=1`), or an absolute URL. */
  target: string
  /** A header's value by lower-case name, or `null` when absent. */
  header(name: string): string | null
  /** Every header, lower-case names (repeated ones joined by `, `): what the proxy forwards. */
  headers?(): Record<string, string>
  /**
   * Reads the whole body, stopping as soon as more than `maxBytes` arrived: the bytes (`null` when
   * there is no body or it is empty), `TOO_LARGE`, or `UNREADABLE`. Called at most once.
   */
  readBody(maxBytes: number): Promise<Uint8Array | null | typeof TOO_LARGE | typeof UNREADABLE>
  /**
   * False when the request surely carries no body (no `Content-Length` or a zero one, and no
   * `Transfer-Encoding`; a fetch `Request` whose body is null): admission then counts no bytes for
   * it. Absent, or true: a body may come, counted at its declared length (`maxBodyBytes` unknown).
   */
  hasBody?(): boolean
  /**
   * Whether the client is gone (its connection closed; a fetch `Request`'s signal aborted): no
   * answer can reach it any more. Absent: not known. The proxy sends nothing for a call whose
   * client went away while it waited for its turn.
   */
  gone?(): boolean
  /** Aborts once the client is gone (see `gone`): what its call sends out is aborted with it. Absent: never. */
  signal?(): AbortSignal
  /**
   * The path prefix a framework stripped before handing the request over (Express's
   * `app.use('/vault', …)`: `/vault`), `''` when none; the OpenAPI document names it as its server.
   */
  mount?(): string
}

/** What the handler answers: a status, headers (lower-case names) and an optional body (UTF-8 text, or bytes: the proxy's). */
export interface Outgoing {
  status: number
  headers: Record<string, string>
  /** `Set-Cookie` headers, one each (a proxy's destination's): written after a `set-cookie` of `headers`. */
  cookies?: readonly string[]
  /** The answer's bytes; a stream (a document's download) is written as it is read, chunk by chunk. */
  body: string | Uint8Array | ReadableStream<Uint8Array> | null
}
