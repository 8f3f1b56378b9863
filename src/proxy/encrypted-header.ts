import type { Ctx } from '../call/index.js'
import { decryptPayload } from '../client-keys/index.js'
import type { Json } from '../kernel/index.js'
import { invalid } from '../kernel/index.js'

/**
 * The proxy's `BT-ENCRYPTED` header, as the reference documents it: base64 of a token request a
 * browser encrypted, `{ "type": "card", "encrypted": "<JWE>" }`, or of an object of such requests
 * by name (`{ "creditCard": { type, encrypted }, "bankAccount": … }`). Each JWE is decrypted with
 * the caller's tenant's client encryption key (`decryptPayload`), and the request's expressions
 * read the result as `encrypted`: `{ type, data }` (`{{ encrypted | json: "$.data.number" }}`), or
 * by name (`{{ encrypted | json: "$.creditCard.data.number" }}`).
 */

/** The longest header value taken, checked before it is decoded (base64 characters). */
export const MAX_ENCRYPTED_HEADER_CHARS = 65_536

/** The most named requests one header may hold. */
export const MAX_ENCRYPTED_REQUESTS = 20

/** The field a bad header is named by. */
const FIELD = 'BT-ENCRYPTED'

const BASE64 = /^(?:[A-Za-z0-9+/_-]{4})*(?:[A-Za-z0-9+/_-]{2,3}={0,2})?$/
const NAME = /^[A-Za-z0-9_-]{1,100}$/
const SHAPE = 'must be base64 of { "type", "encrypted" }, or of an object of them by name'

type JsonObject = { [key: string]: Json }
const isObject = (value: unknown): value is JsonObject =>
  value !== null && typeof value === 'object' && !Array.isArray(value)

/** Whether `value` is one `{ type, encrypted }` request, and nothing else. */
const isRequest = (value: unknown): value is { type: string; encrypted: string } =>
  isObject(value) &&
  Object.keys(value).length === 2 &&
  typeof value.type === 'string' &&
  value.type.length > 0 &&
  value.type.length <= 100 &&
  typeof value.encrypted === 'string'

/** The header's JSON: size bounded first, then base64 (or base64url), UTF-8 and JSON, else 400. */
function decoded(raw: string): unknown {
  if (raw.length > MAX_ENCRYPTED_HEADER_CHARS)
    throw invalid(FIELD, `must be at most ${MAX_ENCRYPTED_HEADER_CHARS} characters`)
  const text = raw.trim()
  if (text === '' || !BASE64.test(text)) throw invalid(FIELD, SHAPE)
  try {
    const bytes = Buffer.from(text.replaceAll('-', '+').replaceAll('_', '/'), 'base64')
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes))
  } catch {
    throw invalid(FIELD, SHAPE)
  }
}

/**
 * What `{{ encrypted … }}` reads for header value `raw`: every request decrypted (one at a time,
 * at most `MAX_ENCRYPTED_REQUESTS`). Any bad header is a 400 naming `BT-ENCRYPTED` before anything
 * is sent; a JWE under another key, tampered with, or naming an unknown, expired or another
 * tenant's key answers the one message `decryptPayload` gives them all.
 */
export async function encryptedHeaderValue(ctx: Ctx, raw: string): Promise<Json> {
  const value = decoded(raw)
  const open = async (request: { type: string; encrypted: string }): Promise<Json> => ({
    type: request.type,
    data: await decryptPayload(ctx, request.encrypted, FIELD),
  })
  if (isRequest(value)) return open(value)
  if (!isObject(value)) throw invalid(FIELD, SHAPE)
  const entries = Object.entries(value)
  if (entries.length === 0) throw invalid(FIELD, SHAPE)
  if (entries.length > MAX_ENCRYPTED_REQUESTS)
    throw invalid(FIELD, `holds ${entries.length} requests; at most ${MAX_ENCRYPTED_REQUESTS}`)
  const out: JsonObject = {}
  for (const [name, request] of entries) {
    if (!NAME.test(name) || !isRequest(request)) throw invalid(FIELD, SHAPE)
  }
  for (const [name, request] of entries) {
    Object.defineProperty(out, name, {
      value: await open(request as { type: string; encrypted: string }),
      enumerable: true,
      writable: true,
    })
  }
  return out
}
