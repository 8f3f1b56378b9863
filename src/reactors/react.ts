import { withoutData } from '../applications/index.js'
import type { Ctx } from '../call/index.js'
import type { ElementType, Json, ReactResult, RequestParameterElement, RunOutcome } from '../kernel/index.js'
import {
  assertNever,
  depthOf,
  FORBIDDEN_KEYS,
  MAX_INPUT_DEPTH,
  ServiceError,
  type ValidationIssues,
} from '../kernel/index.js'
import { creationChecks, fingerprintedNew, planTokenize, writeTokens } from '../tokens/index.js'

/** A JSON object. */
export type JsonObject = { [key: string]: Json }

const isObject = (value: unknown): value is JsonObject =>
  value !== null && typeof value === 'object' && !Array.isArray(value)

const NUMBER = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/

/** `value` as `type`: numbers and booleans from their string forms, strings from numbers and booleans (args and reactor configuration). */
export function castValue(
  type: ElementType,
  value: Json,
): { ok: true; value: Json } | { ok: false; message: string } {
  switch (type) {
    case 'string':
      if (typeof value === 'string') return { ok: true, value }
      if (typeof value === 'number' || typeof value === 'boolean') return { ok: true, value: String(value) }
      return { ok: false, message: 'must be a string' }
    case 'number': {
      if (typeof value === 'number') return { ok: true, value }
      const n = typeof value === 'string' && NUMBER.test(value.trim()) ? Number(value.trim()) : Number.NaN
      return Number.isFinite(n) ? { ok: true, value: n } : { ok: false, message: 'must be a number' }
    }
    case 'boolean': {
      if (typeof value === 'boolean') return { ok: true, value }
      const s = typeof value === 'string' ? value.trim().toLowerCase() : ''
      if (s === 'true' || s === 'false') return { ok: true, value: s === 'true' }
      return { ok: false, message: 'must be true or false' }
    }
  }
}

/**
 * Checks `args` against the formula's request parameters and casts each declared value to its type
 * ("123" → 123, "true" → true, 5 → "5"). A dotted name (`card.number`) reads from and writes back
 * into nested objects. Arguments no parameter declares are kept unchanged. Throws
 * `validation_failed` naming `args.<name>` for each missing required value or impossible cast.
 * `args` is not modified; the answer is a copy.
 */
export function castArgs(params: readonly RequestParameterElement[], args: JsonObject): JsonObject {
  const out = structuredClone(args)
  const issues: ValidationIssues = {}
  for (const param of params) {
    const path = param.name.split('.')
    let parent: JsonObject | null = null
    let node: Json | undefined = out
    for (const key of path) {
      parent = isObject(node) ? node : null
      node = parent && Object.hasOwn(parent, key) && !FORBIDDEN_KEYS.has(key) ? parent[key] : undefined
    }
    if (node === undefined || node === null) {
      if (!param.optional) issues[`args.${param.name}`] = ['is required']
      continue
    }
    const result = castValue(param.type, node)
    if (result.ok) parent![path.at(-1)!] = result.value
    else issues[`args.${param.name}`] = [result.message]
  }
  if (Object.keys(issues).length) {
    const fields = Object.keys(issues).join(', ')
    throw new ServiceError('validation_failed', `Invalid args: ${fields}`, { issues })
  }
  return out
}

/**
 * The error a failed run answers with. Thrown statuses 400–599 are kept; anything else is 500. A
 * thrown error's `errors` block (the reactor formulas SDK's errors: `new BadRequestError('declined')`
 * answers 400, detail `Bad Request`, `errors: { error: ['declined'] }`) is kept as the error's `issues`.
 */
export function runFailure(outcome: Extract<RunOutcome, { ok: false }>, timeoutMs: number): ServiceError {
  switch (outcome.kind) {
    case 'invalid':
      return new ServiceError('formula_invalid', `the reactor formula can't be loaded: ${outcome.message}`)
    case 'thrown': {
      const s = outcome.status
      const status = s !== undefined && Number.isInteger(s) && s >= 400 && s <= 599 ? s : 500
      return new ServiceError('formula_failed', outcome.message, {
        status,
        ...(outcome.errors ? { issues: outcome.errors } : {}),
      })
    }
    case 'timeout':
      return new ServiceError('formula_failed', `the reactor formula ran longer than ${timeoutMs} ms`, {
        status: 504,
      })
    case 'crashed':
      return new ServiceError('formula_failed', `the reactor formula crashed: ${outcome.message}`, {
        status: 500,
      })
    case 'busy':
      return new ServiceError('formula_failed', outcome.message, {
        status: 429,
        retryAfterSec: outcome.retryAfterSec ?? 1,
      })
    case 'unavailable':
      return new ServiceError('formula_failed', outcome.message, {
        status: 503,
        retryAfterSec: outcome.retryAfterSec ?? 1,
      })
    default:
      return assertNever(outcome.kind)
  }
}

/**
 * Why a run failed, in the vault's own words, as its `reactor.failed` event says it: never the
 * formula's thrown message, which may hold what it read (its status only).
 */
export function runFailureText(outcome: Extract<RunOutcome, { ok: false }>, timeoutMs: number): string {
  switch (outcome.kind) {
    case 'invalid':
      return "the reactor formula can't be loaded"
    case 'thrown':
      return `the reactor formula threw an error (status ${runFailure(outcome, timeoutMs).status})`
    case 'timeout':
      return `the reactor formula ran longer than ${timeoutMs} ms`
    case 'crashed':
      return 'the reactor formula crashed'
    case 'busy':
      return 'the formula runner is busy'
    case 'unavailable':
      return 'the formula runner is unavailable'
    default:
      return assertNever(outcome.kind)
  }
}

const failed = (message: string) => new ServiceError('formula_failed', message, { status: 500 })

/**
 * Turns a successful run's answer into the react result, creating every token it asks for in one
 * atomic write (outside any transaction; an id that exists or is locked → conflict, nothing written).
 */
export async function reactResult(ctx: Ctx, value: unknown): Promise<ReactResult> {
  if (value === undefined || value === null) return { tokens: {} }
  if (!isObject(value as Json)) throw failed('the reactor formula must answer an object: { raw?, tokenize? }')
  // An answer 5 000 deep overflowed the stack of the JSON written back (a 500; an asynchronous react never ended).
  if (depthOf(value, MAX_INPUT_DEPTH + 1) > MAX_INPUT_DEPTH + 1)
    throw failed(`the reactor formula's answer nests deeper than ${MAX_INPUT_DEPTH} levels`)
  const { raw, tokenize } = value as JsonObject
  if (tokenize === undefined || tokenize === null)
    return raw === undefined ? { tokens: {} } : { raw, tokens: {} }
  // Tokenized as the tokenize endpoint does: bodies become tokens (answered without data), plain values `token`-type tokens (answered by id).
  const { tokens, minted, answer } = planTokenize(ctx, tokenize, {
    root: 'tokenize',
    refuse: (message) => failed(message),
  })
  const ready = await Promise.all(tokens.map((t) => fingerprintedNew(ctx, t)))
  const created = await writeTokens(
    ctx,
    ready,
    (_tx, written) =>
      creationChecks(
        ctx,
        null,
        written.map((t) => t.id),
      ),
    { enlist: false, minted },
  )
  const byId = new Map(tokens.map((t, i) => [t.token.id, created[i]!.token]))
  const tree = answer((token) => withoutData(byId.get(token.id)!))
  return raw === undefined ? { tokens: tree } : { raw, tokens: tree }
}
