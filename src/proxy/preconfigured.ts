import type { Ctx } from '../call/index.js'
import type { EgressResponse, Json, StoredProxy } from '../kernel/index.js'
import { detokenizedBody } from './bodies.js'
import {
  answerOf,
  destinationUrl,
  endToEnd,
  forwardedHeaders,
  HOP_BY_HOP,
  type ProxyAnswer,
  proxyInvoking,
  send,
} from './forward.js'
import { bodyBytesOf, runTransform, transformBody } from './transforms.js'

/** A call of a pre-configured proxy, its input already checked (see `proxyCallInput`). */
export interface PreconfiguredCall {
  method: string
  path: string
  query: string
  /** The caller's headers, already filtered (`forwardedHeaders`). */
  headers: Record<string, string>
  body: Uint8Array | null
  /**
   * Whether the body's detokenization expressions are replaced under the caller's access: true for
   * a call with an API key; false for an anonymous call (`require_auth: false`), whose body goes on
   * as the request transform leaves it.
   */
  detokenize: boolean
  /** The `BT-ENCRYPTED` header's decrypted value, which `{{ encrypted }}` names (authenticated calls). */
  encrypted?: Json
}

/**
 * One call of a pre-configured proxy: the request transform (if any) on the caller's request, then
 * the expressions of the body it answers replaced (authenticated calls), the request sent to the
 * proxy's `destination_url` + path + query, and the response transform (if any) on a 2xx answer
 * (the reference runs it on 2xx only; any other answer comes back as it is).
 */
export async function preconfiguredCall(
  ctx: Ctx,
  proxy: StoredProxy,
  call: PreconfiguredCall,
): Promise<ProxyAnswer> {
  const url = destinationUrl(proxy.destination_url, call.path, call.query, 'BT-PROXY-KEY')
  await proxyInvoking(ctx, url, call.method, proxy)
  let { headers, body } = call
  if (proxy.request_transform) {
    const args = {
      body: transformBody(body, headers['content-type']),
      headers,
      method: call.method,
      path: call.path,
      query: call.query === '' ? '' : `?${call.query}`,
    }
    const outcome = await runTransform(ctx, proxy, proxy.request_transform.code, args, headers)
    // A `CustomHttpResponseError`'s headers are end to end too: a `transfer-encoding` beside the
    // vault's own length would frame the answer twice.
    if (outcome.kind === 'answer')
      return { ...outcome.answer, headers: endToEnd(outcome.answer.headers, NOT_TRANSFORMED) }
    headers = forwardedHeaders(outcome.value.headers)
    body = bodyBytesOf(outcome.value.body)
    if (body !== null && typeof outcome.value.body !== 'string' && headers['content-type'] === undefined)
      headers['content-type'] = 'application/json'
  }
  if (call.detokenize && body !== null)
    body = await detokenizedBody(ctx, body, headers['content-type'], call.encrypted)
  const response = await send(ctx, { url, method: call.method, headers, body }, 'BT-PROXY-KEY')
  const transform = proxy.response_transform
  if (!transform || response.status < 200 || response.status > 299) return answerOf(response)
  return transformedAnswer(ctx, proxy, transform.code, response)
}

/**
 * What a transform's answer never carries: the hop-by-hop headers (`endToEnd`), and its encoding,
 * since its body is the transform's own.
 */
const NOT_TRANSFORMED = new Set([...HOP_BY_HOP, 'content-encoding'])

/** The destination's 2xx answer through the response transform: its body and headers, the destination's status. */
async function transformedAnswer(
  ctx: Ctx,
  proxy: StoredProxy,
  code: string,
  response: EgressResponse,
): Promise<ProxyAnswer> {
  const answer = answerOf(response)
  const bytes = response.bytes ?? new TextEncoder().encode(response.body)
  const args: { [key: string]: Json } = {
    body: transformBody(bytes, answer.headers['content-type']),
    headers: answer.headers,
  }
  const outcome = await runTransform(ctx, proxy, code, args, answer.headers)
  if (outcome.kind === 'answer')
    return { ...outcome.answer, headers: endToEnd(outcome.answer.headers, NOT_TRANSFORMED) }
  const headers = endToEnd(outcome.value.headers, NOT_TRANSFORMED)
  const out = bodyBytesOf(outcome.value.body)
  if (out !== null && typeof outcome.value.body !== 'string' && headers['content-type'] === undefined)
    headers['content-type'] = 'application/json'
  return {
    status: answer.status,
    headers,
    // The destination's cookies go on as it set them: a transform answers headers of one value each.
    ...(answer.set_cookie ? { set_cookie: answer.set_cookie } : {}),
    body: out === null ? '' : new TextDecoder().decode(out),
    body_encoding: 'utf8',
    destination_status: answer.destination_status,
  }
}
