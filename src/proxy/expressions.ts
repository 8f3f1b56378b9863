import { applyTransform, tokenAccess } from '../applications/index.js'
import type { Ctx } from '../call/index.js'
import type { Json, StoredToken } from '../kernel/index.js'
import {
  countExpression,
  forbidden,
  invalid,
  jsonSize,
  MAX_DETOKENIZED_CHARS,
  nextTurn,
} from '../kernel/index.js'
import {
  type DetokenizationExpression,
  intentForUse,
  parseExpression,
  throughFilters,
} from '../tokens/index.js'
import { readToken } from '../transactions/index.js'

/** At most this many distinct tokens are detokenized in one proxy request (the reference's limit). */
export const MAX_PROXY_TOKENS = 100

/** Any `{{ ... }}` expression in a text. */
const EXPRESSION = /\{\{([^{}]*)\}\}/g
/** A text that is one expression and nothing else. */
const WHOLE = /^\{\{([^{}]*)\}\}$/
/** The key of the `BT-ENCRYPTED` header's value (`{{ encrypted … }}`): a space no id holds. */
const ENCRYPTED_KEY = 'encrypted '

/**
 * The parts of the expression `inner` (see `parseExpression`), or a 400 naming `field`. With
 * `encrypted` (the request has a `BT-ENCRYPTED` header), `encrypted` names its value.
 */
function named(inner: string, field: string, encrypted = false): DetokenizationExpression {
  const e = parseExpression(inner, field)
  if (encrypted && !e.whole && e.id === 'encrypted') return { ...e, key: ENCRYPTED_KEY, whole: true }
  return e
}

/** The expressions' inner texts in `texts`, each with the field it came from. */
export function* expressionsIn(texts: Iterable<[string, string]>): Generator<[string, string]> {
  for (const [field, text] of texts) {
    if (!text.includes('{{')) continue
    for (const m of text.matchAll(EXPRESSION)) yield [field, m[1]!]
  }
}

/**
 * The tokens the expressions of a proxy request name, as the caller's `token:use` access shows them
 * (the rules detokenize applies: `tokenAccess` and `applyTransform`). A token that does not exist,
 * has expired or is another tenant's is the reference's 400 ("Failed to detokenize some tokens");
 * a token the caller may not use, or whose transform shows no data, 403. A token intent
 * (`token_intent: <id>`) is the same (see `intentForUse`) and counts as a token; so does
 * `encrypted`, the `BT-ENCRYPTED` header's value, when the request has one. At most 100 distinct
 * tokens and intents, at most `MAX_DETOKENIZED_CHARS` characters of their data in all (each naming counts).
 */
export async function resolveTokens(
  ctx: Ctx,
  expressions: Iterable<[string, string]>,
  encrypted?: Json,
): Promise<Map<string, { data: Json; token: Json }>> {
  const wanted = new Map<string, { field: string; times: number }>()
  let count = 0
  for (const [field, inner] of expressions) {
    count = countExpression(count, 'body')
    const { key } = named(inner, field, encrypted !== undefined)
    const seen = wanted.get(key)
    if (seen) seen.times++
    else wanted.set(key, { field, times: 1 })
  }
  if (wanted.size > MAX_PROXY_TOKENS) {
    throw invalid('body', `detokenizes ${wanted.size} tokens; at most ${MAX_PROXY_TOKENS} per proxy request`)
  }
  const out = new Map<string, { data: Json; token: Json }>()
  let total = 0
  for (const [key, { field, times }] of wanted) {
    const shown =
      key === ENCRYPTED_KEY ? { data: encrypted!, token: encrypted! } : await shownForKey(ctx, key, field)
    total += times * jsonSize(shown.token, MAX_DETOKENIZED_CHARS - total)
    if (total > MAX_DETOKENIZED_CHARS) {
      throw invalid('body', `would hold more than ${MAX_DETOKENIZED_CHARS} characters of token data`)
    }
    out.set(key, shown)
  }
  // Expressions over large data run their filters in a turn of their own: another tenant's call
  // runs between the last token's opening and them.
  if (total > LARGE_DATA_CHARS) await nextTurn()
  return out
}

/** Characters of token data past which a request's expressions are evaluated in a turn of their own. */
const LARGE_DATA_CHARS = 64 * 1024

/**
 * What `key` names as the caller's `token:use` access shows it (a token intent as `intentForUse`
 * does, its whole record in `token`); one that does not exist is the reference's 400 naming `field`.
 */
async function shownForKey(ctx: Ctx, key: string, field: string): Promise<{ data: Json; token: Json }> {
  if (key.startsWith('intent ')) {
    const id = key.slice('intent '.length)
    const intent = await intentForUse(ctx, id, 'token:use')
    if (intent === null) throw invalid(field, `Failed to detokenize some token intents: ${id}`)
    return { data: (intent as { data: Json }).data, token: intent }
  }
  const stored = await readToken(ctx, null, key)
  if (!stored) throw invalid(field, `Failed to detokenize some tokens: ${key}`)
  return shownForUse(ctx, stored)
}

/** The token as the caller's `token:use` access shows it, or 403. */
function shownForUse(ctx: Ctx, stored: StoredToken): { data: Json; token: Json } {
  const transform = tokenAccess(ctx.principal, 'token:use', stored)
  if (transform === null) throw forbidden(`missing token:use access to token ${stored.id}`)
  const token = applyTransform(stored, transform, ctx.budget, ctx.principal)
  if (token.data === undefined) throw forbidden(`token:use access to token ${stored.id} shows no data`)
  return { data: token.data, token: token as unknown as Json }
}

/** What the expression `inner` stands for: the token's data or whole token, through its filters. */
function expressionValue(
  ctx: Ctx,
  inner: string,
  field: string,
  tokens: Map<string, { data: Json; token: Json }>,
): Json {
  const e = named(inner, field, tokens.has(ENCRYPTED_KEY))
  const found = tokens.get(e.key)!
  return throughFilters(ctx, e.whole ? found.token : found.data, e, field)
}

/** `value` as text inside a longer text: a string as it is, nil as nothing, anything else as JSON. */
const asText = (value: Json): string =>
  typeof value === 'string' ? value : value === null ? '' : JSON.stringify(value)

/**
 * `text` with each expression replaced. With `keepWhole`, a text that is one expression becomes
 * the value itself (a JSON string field holding an object becomes the object).
 */
export function substitute(
  ctx: Ctx,
  text: string,
  field: string,
  tokens: Map<string, { data: Json; token: Json }>,
  keepWhole: boolean,
): Json {
  if (!text.includes('{{')) return text
  const one = keepWhole ? WHOLE.exec(text) : null
  if (one) return expressionValue(ctx, one[1]!, field, tokens)
  return text.replace(EXPRESSION, (_m, inner: string) => asText(expressionValue(ctx, inner, field, tokens)))
}
