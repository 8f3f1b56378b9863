import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { isIP } from 'node:net'
import {
  abortReason,
  type EgressAnswer,
  EgressError,
  type EgressLimits,
  type EgressRequest,
} from '../../src/reactors/index.js'
import { checkedAddress } from './addresses.js'
import { httpAgent, httpsAgent } from './agents.js'

/**
 * One exchange over `node:http`/`node:https` with a listed origin, no redirect followed (the policy
 * of `src/reactors/egress.ts` follows them): the host name resolved and checked on every exchange
 * (`checkedAddress`), the connection made to that address under the origin's own Host header and
 * TLS server name, kept alive for a later exchange to the same checked address (`agents.ts`), the
 * response body bounded.
 */
export async function nodeExchange(
  url: URL,
  request: EgressRequest,
  limits: EgressLimits,
  signal: AbortSignal,
): Promise<EgressAnswer> {
  const target = await checkedAddress(url)
  if (signal.aborted) throw abortReason(signal)
  try {
    return await attempt(url, target, request, limits, signal, true)
  } catch (error) {
    if (!(error instanceof StaleConnection)) throw error
    // Most often the destination closed the kept connection while idle, before it read the request:
    // one new connection. A destination that read it and then reset gets it twice (docs/proxy.md).
    return attempt(url, target, request, limits, signal, false)
  }
}

/** A kept connection that failed (reset, broken pipe) before any answer. */
class StaleConnection extends Error {}

/** One request over a kept connection (`pooled`) or a new one. */
function attempt(
  url: URL,
  target: { address: string; family: number },
  request: EgressRequest,
  limits: EgressLimits,
  signal: AbortSignal,
  pooled: boolean,
): Promise<EgressAnswer> {
  return new Promise((settle, fail) => {
    if (signal.aborted) return fail(abortReason(signal))
    let req: ReturnType<typeof httpRequest>
    let answered = false
    // One listener of our own ends the request on abort: handing `signal` to `http.request` cost 30
    // to 40 µs of CPU a request, a third of a kept-alive exchange's (bench/proxy-steps.bench.ts).
    // Rejects itself too: a request Node no longer reads (after a 101) ignores `destroy`.
    const onAbort = () => {
      req.destroy(abortReason(signal))
      reject(abortReason(signal))
    }
    const resolve = (answer: EgressAnswer) => {
      signal.removeEventListener('abort', onAbort)
      settle(answer)
    }
    const reject = (error: unknown) => {
      signal.removeEventListener('abort', onAbort)
      fail(error)
    }
    try {
      req = send(url, target, request, pooled, (response) => {
        answered = true
        // A status outside 200–599 (`099`, say) is no HTTP answer a caller could be given.
        const status = response.statusCode ?? 0
        if (status < 200 || status > 599) {
          response.destroy()
          reject(
            new EgressError(`${url.origin}: answered with status ${status}, which is not an HTTP answer`),
          )
          return
        }
        readAnswer(url, response, limits, signal).then(resolve, reject)
      })
    } catch {
      reject(new EgressError(`${url.origin}: the request could not be made`))
      return
    }
    signal.addEventListener('abort', onAbort, { once: true })
    req.on('error', (error: Error & { code?: string }) => {
      if (signal.aborted) reject(abortReason(signal))
      else if (req.reusedSocket && !answered && STALE.has(error.code ?? '')) reject(new StaleConnection())
      else reject(new EgressError(`${url.origin}: connection failed (${error.code ?? 'error'})`))
    })
    // A 101 (Switching Protocols) is no answer: its connection is closed. Node gives such a request
    // `upgrade` (or, with no listener, only `close`), never `response` or `error`.
    req.on('upgrade', (_response, socket) => {
      socket.destroy()
      reject(
        new EgressError(`${url.origin}: answered 101 (Switching Protocols), which a proxied call can't take`),
      )
    })
    req.on('close', () => {
      if (!answered) reject(new EgressError(`${url.origin}: the connection closed without an answer`))
    })
    req.end(request.body)
  })
}

/** How a kept connection the destination closed while it was idle fails on reuse. */
const STALE = new Set(['ECONNRESET', 'EPIPE'])

/** Starts the request to `target` (the checked address of `url`). */
function send(
  url: URL,
  target: { address: string; family: number },
  request: EgressRequest,
  pooled: boolean,
  onResponse: (response: IncomingMessage) => void,
): ReturnType<typeof httpRequest> {
  const https = url.protocol === 'https:'
  const headers: Record<string, string> = { ...request.headers, host: url.host }
  if (request.body !== undefined) headers['content-length'] = String(Buffer.byteLength(request.body))
  const options = {
    host: target.address,
    family: target.family,
    port: url.port || (https ? 443 : 80),
    path: `${url.pathname}${url.search}`,
    method: request.method,
    headers,
    agent: pooled ? (https ? httpsAgent : httpAgent) : (false as const),
    ...(https && !isIP(url.hostname.replace(/^\[|\]$/g, '')) ? { servername: url.hostname } : {}),
  }
  return (https ? httpsRequest : httpRequest)(options, onResponse)
}

/** A response's status and headers (repeated ones joined by `, `, each `Set-Cookie` apart). */
function headOf(
  response: IncomingMessage,
): Pick<EgressAnswer, 'status' | 'statusText' | 'headers' | 'setCookie'> {
  const headers: Record<string, string> = {}
  const { 'set-cookie': setCookie, ...rest } = response.headers
  for (const [name, value] of Object.entries(rest)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value
  }
  return {
    status: response.statusCode ?? 0,
    statusText: response.statusMessage ?? '',
    headers,
    ...(setCookie?.length ? { setCookie } : {}),
  }
}

/** Reads a response whole, at most `limits.maxResponseBytes` of body (none when `statusOnly`). */
function readAnswer(
  url: URL,
  response: IncomingMessage,
  limits: EgressLimits,
  signal: AbortSignal,
): Promise<EgressAnswer> {
  return new Promise((resolve, reject) => {
    if (limits.statusOnly) {
      response.destroy()
      return resolve({ ...headOf(response), body: '', bytes: new Uint8Array(0) })
    }
    // Refused first: the destroy fails the response at once, which would say it was cut off.
    const tooLarge = () => {
      reject(new EgressError(`response body is larger than ${limits.maxResponseBytes} bytes`))
      response.destroy()
    }
    const declared = Number(response.headers['content-length'])
    if (Number.isFinite(declared) && declared > limits.maxResponseBytes) return tooLarge()
    const chunks: Buffer[] = []
    let size = 0
    response.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > limits.maxResponseBytes) return tooLarge()
      chunks.push(chunk)
    })
    response.on('end', () => {
      const bytes = Buffer.concat(chunks)
      resolve({
        ...headOf(response),
        body: bytes.toString('utf8'),
        bytes: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength),
      })
    })
    const cutOff = () =>
      reject(
        signal.aborted && signal.reason instanceof EgressError
          ? signal.reason
          : new EgressError(`${url.origin}: the response was cut off`),
      )
    response.on('error', cutOff)
    response.on('aborted', cutOff)
  })
}
