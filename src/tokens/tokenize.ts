import type { Ctx } from '../call/index.js'
import type { Json, StoredToken, Token, TokenTree } from '../kernel/index.js'
import { conflict, ServiceError, type ValidationIssues } from '../kernel/index.js'
import { newToken } from './create.js'
import type { NewToken } from './dedup.js'

/** A JSON object. */
type JsonObject = { [key: string]: Json }

/** At most this many tokens per tokenize request (or formula `tokenize` output). */
export const MAX_TOKENIZE = 100
/** At most this deep a tokenize request nests. */
export const MAX_TOKENIZE_DEPTH = 8

const isObject = (value: unknown): value is JsonObject =>
  value !== null && typeof value === 'object' && !Array.isArray(value)

/** A token create body: an object with a string `type` and a `data` member. */
export const isTokenBody = (value: Json): value is JsonObject =>
  isObject(value) && typeof value['type'] === 'string' && 'data' in value

/** How a plan reports a request it refuses (too many tokens, too deep): as the caller's error. */
export type Refuse = (message: string, path: string) => ServiceError

/**
 * The tokens a tokenize request asks for, not yet written, and how to answer once they are: a
 * token create body becomes a token, a plain value a `token`-type token answered by its id, `null`
 * stays; objects and arrays are walked. Each body is checked as token create checks it (with
 * `token:create` access on its containers); a bad one is `validation_failed` naming
 * `<root>.<path>.<field>`. Ids must be distinct within the request.
 */
export function planTokenize(
  ctx: Ctx,
  input: Json,
  options: { root: string; refuse: Refuse },
): {
  tokens: NewToken[]
  /** The ids the plan made (bodies that gave none, plain values). */
  minted: string[]
  answer(show: (token: StoredToken) => Token): TokenTree
} {
  const tokens: NewToken[] = []
  const minted: string[] = []
  const name = (path: string) =>
    options.root ? (path ? `${options.root}.${path}` : options.root) : path || 'body'
  const add = (body: JsonObject, path: string) => {
    if (tokens.length >= MAX_TOKENIZE) {
      throw options.refuse(
        `${options.root || 'the request'} holds more than ${MAX_TOKENIZE} tokens`,
        name(path),
      )
    }
    const made = newTokenAt(ctx, body, name(path), minted)
    const { token } = made
    if (tokens.some((t) => t.token.id === token.id))
      throw conflict(`a token with id ${token.id} already exists`)
    tokens.push(made)
    return token
  }
  type Plan = Leaf | null | Plan[] | { [key: string]: Plan }
  const walk = (node: Json, path: string, depth: number): Plan => {
    if (depth > MAX_TOKENIZE_DEPTH) {
      throw options.refuse(
        `${options.root || 'the request'} is nested deeper than ${MAX_TOKENIZE_DEPTH} levels`,
        name(path),
      )
    }
    if (node === null) return null
    if (isTokenBody(node)) return new Leaf(add(node, path), false)
    const at = (key: string | number) => (path ? `${path}.${key}` : String(key))
    if (Array.isArray(node)) return node.map((item, i) => walk(item, at(i), depth + 1))
    if (isObject(node)) {
      const out: { [key: string]: Plan } = {}
      for (const [key, value] of Object.entries(node)) {
        Object.defineProperty(out, key, {
          value: walk(value, at(key), depth + 1),
          enumerable: true,
          writable: true,
        })
      }
      return out
    }
    return new Leaf(add({ type: 'token', data: node }, path), true)
  }
  const plan = walk(input, '', 0)
  const answer = (show: (token: StoredToken) => Token): TokenTree => {
    const render = (p: Plan): TokenTree => {
      if (p === null) return null
      if (Array.isArray(p)) return p.map(render)
      if (p instanceof Leaf) return p.plain ? p.token.id : show(p.token)
      const out: { [key: string]: TokenTree } = {}
      for (const [key, value] of Object.entries(p)) {
        Object.defineProperty(out, key, { value: render(value), enumerable: true, writable: true })
      }
      return out
    }
    return render(plan)
  }
  return { tokens, minted, answer }
}

/** A token the plan makes: from a create body, or from a plain value (answered by its id). */
class Leaf {
  constructor(
    readonly token: StoredToken,
    readonly plain: boolean,
  ) {}
}

/** `newToken` with every field path of a validation error put under `path`. */
function newTokenAt(ctx: Ctx, body: JsonObject, path: string, minted: string[]): NewToken {
  try {
    return newToken(ctx, body, minted)
  } catch (error) {
    if (!(error instanceof ServiceError) || error.code !== 'validation_failed') throw error
    const issues: ValidationIssues = {}
    for (const [field, messages] of Object.entries(error.issues ?? {})) {
      issues[field === 'body' ? path : `${path}.${field}`] = messages
    }
    throw new ServiceError('validation_failed', `Invalid ${path}: ${error.message}`, { issues })
  }
}
