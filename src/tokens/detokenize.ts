import { applyTransform, tokenAccess } from '../applications/index.js'
import type { Ctx } from '../call/index.js'
import { evaluateTemplate } from '../expressions/index.js'
import type { Json, Permission, StoredTransaction, Token } from '../kernel/index.js'
import {
  countExpression,
  depthOf,
  forbidden,
  invalid,
  jsonSize,
  MAX_DETOKENIZED_CHARS,
  MAX_INPUT_DEPTH,
} from '../kernel/index.js'
import { readToken } from '../transactions/index.js'
import { intentForUse } from './token-intents.js'

/** At most this many distinct tokens are detokenized in one request (the reference's limit). */
export const MAX_DETOKENIZED = 100

/** Any `{{ ... }}` expression in a string. */
const EXPRESSION = /\{\{([^{}]*)\}\}/g
/** A string that is one expression and nothing else. */
const WHOLE = /^\{\{([^{}]*)\}\}$/
/**
 * What an expression holds: `token: <id>` (the whole token), `token_intent: <id>` (the whole token
 * intent, its data under `data`) or `<id>` (a token's data), then any filters (`| json: '$.number'`).
 * The id is shaped as `tokenId` in `src/tokens/schemas.ts`.
 */
const HEAD = /^\s*(?:(token_intent|token)\s*:\s*)?([A-Za-z0-9_-][A-Za-z0-9._:~-]{0,199})\s*(\|[\s\S]*)?$/
/** What the key of a token intent starts with (a space: no token id holds one). */
const INTENT_KEY = 'intent '

/**
 * One detokenization expression: what it names (`key`: the token's id, or `intent <id>` for a
 * token intent), whether it names the whole record (`token:`, `token_intent:`), and its filters'
 * text (`''` for none).
 */
export interface DetokenizationExpression {
  id: string
  key: string
  whole: boolean
  filters: string
}

/** The parts of the expression `inner` (the text between the braces), or a 400 naming `field`. */
export function parseExpression(inner: string, field: string): DetokenizationExpression {
  const m = HEAD.exec(inner)
  if (!m) throw invalid(field, 'holds a detokenization expression that does not name a token id')
  const id = m[2]!
  return {
    id,
    key: m[1] === 'token_intent' ? INTENT_KEY + id : id,
    whole: m[1] !== undefined,
    filters: m[3] ?? '',
  }
}

/**
 * `value` (a token's data, or the whole record when `whole`) through the expression's `filters`,
 * run as the expression language runs them (masks, fingerprints) on one variable, charged to the
 * call's budget; errors name `field`.
 */
export function throughFilters(ctx: Ctx, value: Json, e: DetokenizationExpression, field: string): Json {
  if (e.filters === '') return value
  const name = e.whole ? 'token' : 'data'
  return evaluateTemplate(
    `{{ ${name} ${e.filters} }}`,
    { [name]: value },
    field,
    ctx.budget,
    ctx.principal.tenantId,
  )
}

/** Every string in `value` with its dotted path (`value` nests at most `MAX_INPUT_DEPTH` levels). */
function* strings(value: Json, path: string): Generator<[string, string]> {
  if (typeof value === 'string') yield [path, value]
  else if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) yield* strings(item, `${path}.${i}`)
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) yield* strings(item, `${path}.${key}`)
  }
}

/** Where and how `detokenize` resolves expressions. */
export interface DetokenizeOptions {
  /** The name of the value in error paths (`args`, `body`). */
  root: string
  /** The access each token needs: `token:use` (react args) or `token:read` (the detokenize endpoint). */
  permission: Extract<Permission, 'token:use' | 'token:read'>
  /** The caller's transaction, whose staged writes reads see (or null). */
  tx: StoredTransaction | null
}

/**
 * Replaces detokenization expressions in `args` (the reference's `{{ <token id> }}`) with token data,
 * before `args` are validated and cast. A string that is one expression becomes the token's data as
 * it is (an object stays an object); an expression inside a longer string is replaced by the data's
 * text (a string as is, anything else as JSON). Each token must exist in the caller's tenant and not
 * be expired (else 400 naming `args.<path>`), and the caller needs `token:use` on it (else 403); the
 * data is what that access's transform shows (`reveal`: plaintext, `mask`: the mask; a transform that
 * shows nothing is 403). At most 100 distinct tokens per request, at most `MAX_DETOKENIZED_CHARS`
 * characters of token data in all (each reference counted: a token named 300 times counts 300
 * times; refused before the arguments are built), `args` at most `MAX_INPUT_DEPTH` levels deep.
 * `args` is not modified.
 */
export async function detokenizeArgs(
  ctx: Ctx,
  args: { [key: string]: Json },
): Promise<{ [key: string]: Json }> {
  return (await detokenize(ctx, args, { root: 'args', permission: 'token:use', tx: null })) as {
    [key: string]: Json
  }
}

/**
 * Replaces the detokenization expressions in any JSON value, as `detokenizeArgs` describes, under
 * `options.permission`; `{{ token: <id> }}` (a full token expression) becomes the whole token as
 * that access shows it, `{{ token_intent: <id> }}` the caller's tenant's live token intent with its
 * data (see `intentForUse`; absent, expired or another tenant's: 400 naming the path), counted
 * with the tokens. `value` is not modified.
 */
export async function detokenize(ctx: Ctx, value: Json, options: DetokenizeOptions): Promise<Json> {
  const { root, permission, tx } = options
  const args = value
  if (depthOf(args, MAX_INPUT_DEPTH) > MAX_INPUT_DEPTH) {
    throw invalid(root, `is nested deeper than ${MAX_INPUT_DEPTH} levels`)
  }
  /** Each token named: where first, and how often as its data and as the whole token. */
  const wanted = new Map<string, { path: string; data: number; whole: number }>()
  let expressions = 0
  for (const [path, text] of strings(args, root)) {
    for (const m of text.matchAll(EXPRESSION)) {
      expressions = countExpression(expressions, root)
      const e = parseExpression(m[1]!, path)
      let named = wanted.get(e.key)
      if (!named) {
        named = { path, data: 0, whole: 0 }
        wanted.set(e.key, named)
      }
      if (e.whole) named.whole++
      else named.data++
    }
  }
  if (wanted.size === 0) return args
  if (wanted.size > MAX_DETOKENIZED) {
    throw invalid(root, `detokenizes ${wanted.size} tokens; at most ${MAX_DETOKENIZED} per request`)
  }
  const data = new Map<string, Json>()
  const whole = new Map<string, Token | Json>()
  /** Characters of token data the answer will hold so far: checked after each token, before the next is read. */
  let total = 0
  const weigh = (value: unknown, times: number) => {
    if (times === 0) return
    total += times * jsonSize(value, MAX_DETOKENIZED_CHARS - total)
    if (total > MAX_DETOKENIZED_CHARS) {
      throw invalid(
        root,
        `would hold more than ${MAX_DETOKENIZED_CHARS} characters of token data (each reference counts, repeats too)`,
      )
    }
  }
  for (const [id, named] of wanted) {
    const { path } = named
    if (id.startsWith(INTENT_KEY)) {
      const intent = await intentForUse(ctx, id.slice(INTENT_KEY.length), permission)
      if (intent === null)
        throw invalid(path, `names token intent ${id.slice(INTENT_KEY.length)}, which does not exist`)
      weigh(intent, named.whole)
      whole.set(id, intent)
      continue
    }
    const token = await readToken(ctx, tx, id)
    if (!token) throw invalid(path, `names token ${id}, which does not exist`)
    const transform = tokenAccess(ctx.principal, permission, token)
    if (transform === null) throw forbidden(`missing ${permission} access to token ${id}`)
    const shownToken = applyTransform(token, transform, ctx.budget, ctx.principal)
    const shown = shownToken.data
    if (shown === undefined)
      throw forbidden(`${permission} access to token ${id} shows no data (${transform})`)
    weigh(shown, named.data)
    weigh(shownToken, named.whole)
    data.set(id, shown)
    whole.set(id, shownToken)
  }
  /** What an expression stands for: the whole token for `token: <id>`, else its data, through its filters. */
  const resolve = (inner: string, path: string): Json => {
    const e = parseExpression(inner, path)
    const value = e.whole ? (whole.get(e.key) as unknown as Json) : data.get(e.key)!
    return throughFilters(ctx, value, e, path)
  }
  const replace = (value: Json, path: string): Json => {
    if (typeof value === 'string') {
      const one = WHOLE.exec(value)
      if (one) return resolve(one[1]!, path)
      if (!value.includes('{{')) return value
      return value.replace(EXPRESSION, (_m, inner: string) => {
        const d = resolve(inner, path)
        return typeof d === 'string' ? d : JSON.stringify(d)
      })
    }
    if (Array.isArray(value)) return value.map((item, i) => replace(item, `${path}.${i}`))
    if (value !== null && typeof value === 'object') {
      const out: { [key: string]: Json } = {}
      for (const [key, item] of Object.entries(value)) {
        // defineProperty: an own `__proto__` key (JSON.parse makes them) stays a plain key.
        Object.defineProperty(out, key, {
          value: replace(item, `${path}.${key}`),
          enumerable: true,
          writable: true,
          configurable: true,
        })
      }
      return out
    }
    return value
  }
  return replace(args, root)
}
