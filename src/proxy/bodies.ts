import type { Ctx } from '../call/index.js'
import type { Json } from '../kernel/index.js'
import { depthOf, invalid, jsonShape, MAX_INPUT_DEPTH, MAX_JSON_VALUES } from '../kernel/index.js'
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

/** The keys from the body to a value: the field a 400 names is made from them only when needed. */
type Keys = (string | number)[]
const fieldOf = (keys: Keys): string => ['body', ...keys].join('.')

/** Whether a string holds an expression (`{{ … }}` closed): only then is its path made. */
const holdsExpression = (value: string) => {
  const open = value.indexOf('{{')
  return open !== -1 && value.indexOf('}}', open + 2) !== -1
}

/** The expressions of a JSON value's strings, each with its dotted path (built only for a string holding one). */
function jsonExpressions(value: Json, keys: Keys, out: [string, string][]): void {
  if (typeof value === 'string') {
    // A path is a copy of its keys: made for every string with `{{` in a body whose keys were long,
    // 100 000 of them held the process for minutes.
    if (holdsExpression(value)) out.push(...expressionsIn([[fieldOf(keys), value]]))
  } else if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      keys.push(i)
      jsonExpressions(value[i]!, keys, out)
      keys.pop()
    }
  } else if (value !== null && typeof value === 'object') {
    for (const key of Object.keys(value)) {
      keys.push(key)
      jsonExpressions(value[key]!, keys, out)
      keys.pop()
    }
  }
}

type Tokens = Awaited<ReturnType<typeof resolveTokens>>

/**
 * `value` with the expressions of its strings replaced (a string that is one expression takes the
 * value). A container none of whose strings changed is answered as it is, not copied.
 */
function replaceJson(ctx: Ctx, value: Json, keys: Keys, tokens: Tokens): Json {
  if (typeof value === 'string')
    return holdsExpression(value) ? substitute(ctx, value, fieldOf(keys), tokens, true) : value
  if (value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) {
    let out: Json[] | null = null
    for (let i = 0; i < value.length; i++) {
      keys.push(i)
      const item = replaceJson(ctx, value[i]!, keys, tokens)
      keys.pop()
      if (item !== value[i] && out === null) out = value.slice(0, i)
      out?.push(item)
    }
    return out ?? value
  }
  let out: { [key: string]: Json } | null = null
  const names = Object.keys(value)
  for (let i = 0; i < names.length; i++) {
    const key = names[i]!
    keys.push(key)
    const item = replaceJson(ctx, value[key]!, keys, tokens)
    keys.pop()
    if (item !== value[key] && out === null) {
      out = {}
      for (const before of names.slice(0, i)) own(out, before, value[before]!)
    }
    if (out !== null) own(out, key, item)
  }
  return out ?? value
}

/** Sets `key` of `out` as an own property: an own `__proto__` key (JSON.parse makes them) stays a plain key. */
function own(out: { [key: string]: Json }, key: string, value: Json): void {
  Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true })
}

/** A JSON body's text parsed, or a 400 (its shape checked first: its depth, and its values as the API's bodies). */
function parsedJson(text: string): Json {
  const shape = jsonShape(text, MAX_INPUT_DEPTH, MAX_JSON_VALUES)
  if (shape === 'deep') throw invalid('body', `is nested deeper than ${MAX_INPUT_DEPTH} levels`)
  if (shape === 'many')
    throw invalid('body', `holds more than ${MAX_JSON_VALUES} values (array elements and object members)`)
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
 * the same bytes. `encrypted`: the `BT-ENCRYPTED` header's decrypted value, which `{{ encrypted }}`
 * names (see `encrypted-header.ts`).
 */
export async function detokenizedBody(
  ctx: Ctx,
  body: Uint8Array,
  contentType: string | undefined,
  encrypted?: Json,
) {
  const kind = bodyKind(contentType)
  if (kind === 'bytes' || body.byteLength === 0) return body
  const text = utf8(body)
  if (text === null) return body
  // A form's values are percent-encoded (`%7B%7B` is `{{`, as URLSearchParams and querystring
  // write it): they are looked at decoded.
  if (kind === 'form') return detokenizedForm(ctx, body, text, encrypted)
  if (!text.includes('{{')) return body
  if (kind === 'json') {
    const value = parsedJson(text)
    const found: [string, string][] = []
    jsonExpressions(value, [], found)
    const tokens = await resolveTokens(ctx, found, encrypted)
    return encoder.encode(JSON.stringify(replaceJson(ctx, value, [], tokens)))
  }
  const tokens = await resolveTokens(ctx, expressionsIn([['body', text]]), encrypted)
  return encoder.encode(substitute(ctx, text, 'body', tokens, false) as string)
}

/** How many times `char` occurs in `text` (counted without a copy). */
function countOf(text: string, char: string): number {
  let n = 0
  for (let at = text.indexOf(char); at !== -1; at = text.indexOf(char, at + 1)) n++
  return n
}

/** A form body with the expressions of its (decoded) values replaced; the same bytes when none has one. */
async function detokenizedForm(ctx: Ctx, body: Uint8Array, text: string, encrypted?: Json) {
  // No `{{` in any value, decoded or not: passed as it is, whatever its size, without a parse.
  if (!text.includes('{{') && !/%7b%7b|%7b\{|\{%7b/i.test(text)) return body
  if (countOf(text, '&') >= MAX_JSON_VALUES)
    throw invalid('body', `holds more than ${MAX_JSON_VALUES} form fields`)
  const fields = [...new URLSearchParams(text)]
  if (!fields.some(([, value]) => value.includes('{{'))) return body
  const texts = fields.map(([name, value]): [string, string] => [`body.${name}`, value])
  const tokens = await resolveTokens(ctx, expressionsIn(texts), encrypted)
  const out = new URLSearchParams()
  for (const [name, value] of fields) {
    const replaced = substitute(ctx, value, `body.${name}`, tokens, false)
    out.append(name, typeof replaced === 'string' ? replaced : JSON.stringify(replaced))
  }
  return encoder.encode(out.toString())
}
