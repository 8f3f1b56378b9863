import type { Ctx } from '../call/index.js'
import { decryptPayload } from '../client-keys/index.js'
import type { Json } from '../kernel/index.js'
import { invalid } from '../kernel/index.js'
import { MAX_TOKENIZE, MAX_TOKENIZE_DEPTH } from './tokenize.js'

/** A JSON object. */
type JsonObject = { [key: string]: Json }

const isObject = (value: unknown): value is JsonObject =>
  value !== null && typeof value === 'object' && !Array.isArray(value)

/**
 * A token create body whose data a browser encrypted (the reference's `{ type, encrypted }`, as
 * its elements' `encryptToken` makes it): an object with a string `type` and an `encrypted` member.
 */
const isEncryptedBody = (value: unknown): value is JsonObject =>
  isObject(value) && typeof value['type'] === 'string' && 'encrypted' in value

/**
 * `body` with its `encrypted` JWE decrypted into `data` (see `decryptPayload`), as if the plaintext
 * had been sent; a body without `encrypted` as it is. `data` and `encrypted` together: a 400.
 */
export async function decryptedBody<T>(ctx: Ctx, body: T, field = 'encrypted'): Promise<T> {
  if (!isObject(body) || !('encrypted' in body)) return body
  const { encrypted, ...rest } = body
  if ('data' in rest) throw invalid(field, 'is given with data: send one of them')
  const data = await decryptPayload(ctx, encrypted, field)
  return { ...rest, data } as T
}

/**
 * A tokenize request with each encrypted token create body decrypted (`decryptedBody`): the walk
 * stops where tokenize's does (its depth, its count of token bodies), so tokenize itself refuses
 * what is past them. Bodies are decrypted one at a time.
 */
export async function decryptedTree(ctx: Ctx, input: Json): Promise<Json> {
  let bodies = 0
  const walk = async (node: Json, path: string, depth: number): Promise<Json> => {
    if (depth > MAX_TOKENIZE_DEPTH || node === null || typeof node !== 'object') return node
    if (isEncryptedBody(node)) {
      if (++bodies > MAX_TOKENIZE) return node
      return decryptedBody(ctx, node, path ? `${path}.encrypted` : 'encrypted')
    }
    const at = (key: string | number) => (path ? `${path}.${key}` : String(key))
    if (Array.isArray(node)) {
      const out: Json[] = []
      for (const [i, item] of node.entries()) out.push(await walk(item, at(i), depth + 1))
      return out
    }
    const out: JsonObject = {}
    for (const [key, value] of Object.entries(node as JsonObject)) {
      Object.defineProperty(out, key, {
        value: await walk(value, at(key), depth + 1),
        enumerable: true,
        writable: true,
      })
    }
    return out
  }
  return walk(input, '', 0)
}
