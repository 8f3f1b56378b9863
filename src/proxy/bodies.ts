import type { Ctx } from '../call/index.js'
import type { Json } from '../kernel/index.js'
import { depthOf, invalid, MAX_INPUT_DEPTH } from '../kernel/index.js'
import { expressionsIn, resolveTokens, substitute } from './expressions.js'

/** How a body is read for expressions, by its content type. */
export type BodyKind = 'json' | 'form' | 'text' | 'bytes'

/** The kind of a body declared as `contentType` (`text` when none: the reference treats it as a string). */
export function bodyKind(contentType: string | undefined): BodyKind {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase()
  if (type === 'application/json' || /^application\/[^/]+\+json$/.test(type)) return 'json'
  if (type === 'application/x-www-form-urlencoded') return 'form'
  if (type === '' || type.startsWith('text/') || type.endsWith('/xml') || type.endsWith('+xml')) return 'text'
  return 'bytes'
}

const decoder = new TextDecoder('utf-8', { fatal: true })
const encoder = new TextEncoder()

/** `bytes` as UTF-8 text, or null when they are not UTF-8. */
export function utf8(bytes: Uint8Array): string | null {
  try {
    return decoder.decode(bytes)
  } catch {
    return null
  }
}

/** Every string of a JSON value with its dotted path. */
function* strings(value: Json, path: string): Generator<[string, string]> {
  if (typeof value === 'string') yield [path, value]
  else if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) yield* strings(item, `${path}.${i}`)
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) yield* strings(item, `${path}.${key}`)
  }
}

type Tokens = Awaited<ReturnType<typeof resolveTokens>>

/** `value` with the expressions of its strings replaced (a string that is one expression takes the value). */
function replaceJson(ctx: Ctx, value: Json, path: string, tokens: Tokens): Json {
  if (typeof value === 'string') return substitute(ctx, value, path, tokens, true)
  if (Array.isArray(value)) return value.map((item, i) => replaceJson(ctx, item, `${path}.${i}`, tokens))
  if (value === null || typeof value !== 'object') return value
  const out: { [key: string]: Json } = {}
  for (const [key, item] of Object.entries(value)) {
    // defineProperty: an own `__proto__` key (JSON.parse makes them) stays a plain key.
    Object.defineProperty(out, key, {
      value: replaceJson(ctx, item, `${path}.${key}`, tokens),
      enumerable: true,
      writable: true,
      configurable: true,
    })
  }
  return out
}

/** A JSON body's text parsed, or a 400. */
function parsedJson(text: string): Json {
  let value: Json
  try {
    value = JSON.parse(text) as Json
  } catch {
    throw invalid('body', 'is declared as JSON but is not valid JSON')
  }
  if (depthOf(value, MAX_INPUT_DEPTH) > MAX_INPUT_DEPTH)
    throw invalid('body', `is nested deeper than ${MAX_INPUT_DEPTH} levels`)
  return value
}

/**
 * The body with its detokenization expressions replaced under the caller's `token:use` access:
 * JSON (each string; a string that is one expression becomes the token's value, an object stays
 * an object), form fields (each value), or text. A body with no expression, or of another type, is
 * the same bytes.
 */
export async function detokenizedBody(ctx: Ctx, body: Uint8Array, contentType: string | undefined) {
  const kind = bodyKind(contentType)
  if (kind === 'bytes' || body.byteLength === 0) return body
  const text = utf8(body)
  if (text === null || !text.includes('{{')) return body
  if (kind === 'json') {
    const value = parsedJson(text)
    const tokens = await resolveTokens(ctx, expressionsIn(strings(value, 'body')))
    return encoder.encode(JSON.stringify(replaceJson(ctx, value, 'body', tokens)))
  }
  if (kind === 'form') {
    const fields = [...new URLSearchParams(text)]
    const texts = fields.map(([name, value]): [string, string] => [`body.${name}`, value])
    const tokens = await resolveTokens(ctx, expressionsIn(texts))
    const out = new URLSearchParams()
    for (const [name, value] of fields) {
      const replaced = substitute(ctx, value, `body.${name}`, tokens, false)
      out.append(name, typeof replaced === 'string' ? replaced : JSON.stringify(replaced))
    }
    return encoder.encode(out.toString())
  }
  const tokens = await resolveTokens(ctx, expressionsIn([['body', text]]))
  return encoder.encode(substitute(ctx, text, 'body', tokens, false) as string)
}
