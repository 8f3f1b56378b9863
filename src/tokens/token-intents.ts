import type * as v from 'valibot'
import { applyTransform, requirePermission, tokenAccess } from '../applications/index.js'
import type { Ctx } from '../call/index.js'
import type { Json, StoredToken, StoredTokenIntent } from '../kernel/index.js'
import { forbidden, invalid, isoAfter, newId, notFound, parse } from '../kernel/index.js'
import type { Check, Op } from '../store/index.js'
import { decryptedBody } from './encrypted.js'
import { type createTokenInput, createTokenIntentInput } from './schemas.js'
import { fingerprintOf, typeRules } from './token-types.js'
import { MAX_TOKENIZE, MAX_TOKENIZE_DEPTH } from './tokenize.js'

/**
 * Token intents (`/token-intents`), as Basis Theory documents them: the data of a token not yet
 * made, validated as a token of its type is, answered without its data (a `card` or `bank` summary
 * and the fingerprint instead), kept sealed until it is converted into a token (`token_intent_id`
 * on token create, which deletes it) or deleted, and at most a day: at and after `expires_at` it
 * answers as not found and the sweep deletes it.
 */

/** How long a token intent lives: one day (the reference's default TTL), in ms. */
export const TOKEN_INTENT_TTL_MS = 24 * 60 * 60 * 1000

/** A token intent as answered: every field but its data. */
export type TokenIntent = Omit<StoredTokenIntent, 'data'>

type JsonObject = { [key: string]: Json }
const isObject = (value: Json | undefined): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * The brand of a card number by its issuer identification number, over the ranges the card networks
 * publish (no BIN table here: a number outside them has no brand, `null`, as the reference answers
 * a number of unknown BIN).
 */
export function cardBrand(number: string): string | null {
  const n = (len: number) => Number(number.slice(0, len))
  if (number.startsWith('4')) return 'visa'
  if ((n(2) >= 51 && n(2) <= 55) || (n(4) >= 2221 && n(4) <= 2720)) return 'mastercard'
  if (n(2) === 34 || n(2) === 37) return 'american-express'
  if (number.startsWith('6011') || number.startsWith('65') || (n(3) >= 644 && n(3) <= 649)) return 'discover'
  if (n(4) >= 3528 && n(4) <= 3589) return 'jcb'
  if (n(2) === 36 || n(2) === 38 || n(2) === 39 || (n(3) >= 300 && n(3) <= 305)) return 'diners-club'
  if (number.startsWith('62')) return 'unionpay'
  return null
}

/**
 * The summary an intent of `type` answers in place of its data (`card`, `bank`), as the reference's
 * Token Intent object: a card's BIN (8 digits of a number of 16 or more, else 6), last four,
 * expiry and brand (`funding` and `authentication` need a BIN table: `null`); a bank account's
 * routing number and last four digits. Other types answer none.
 */
export function intentSummary(type: string, data: Json): Pick<StoredTokenIntent, 'card' | 'bank'> {
  if (!isObject(data)) return {}
  if (type === 'card' && typeof data.number === 'string') {
    const number = data.number
    return {
      card: {
        bin: number.slice(0, number.length >= 16 ? 8 : 6),
        last4: number.slice(-4),
        ...(data.expiration_month === undefined ? {} : { expiration_month: data.expiration_month }),
        ...(data.expiration_year === undefined ? {} : { expiration_year: data.expiration_year }),
        brand: cardBrand(number),
        funding: null,
        authentication: null,
      },
    }
  }
  if (type === 'bank' && typeof data.account_number === 'string')
    return {
      bank: {
        routing_number: data.routing_number ?? null,
        account_number_last4: data.account_number.slice(-4),
      },
    }
  return {}
}

/** An intent as answered: without its data. */
export function shownIntent(intent: StoredTokenIntent): TokenIntent {
  const { data: _data, ...shown } = intent
  return shown
}

/**
 * Parses a token intent create body (`{ type, data }`) and checks its data against the type's
 * rules, as a token create does: a bad body is a 400 naming the field. The one place the body is
 * read, so another input form (an encrypted payload) can hand its `{ type, data }` here.
 */
export function parseTokenIntentInput(input: unknown): { type: string; data: Json } {
  const body = parse(createTokenIntentInput, input)
  typeRules(body.type).validate(body.data)
  return { type: body.type, data: body.data as Json }
}

/** A new intent record of the caller's tenant from a checked body: fingerprinted, expiring in a day. */
async function newIntent(ctx: Ctx, body: { type: string; data: Json }): Promise<StoredTokenIntent> {
  const now = ctx.now()
  const record: StoredTokenIntent = {
    id: newId(),
    tenant_id: ctx.principal.tenantId,
    type: body.type,
    data: body.data,
    ...intentSummary(body.type, body.data),
    created_by: ctx.principal.id,
    created_at: now,
    expires_at: isoAfter(now, TOKEN_INTENT_TTL_MS),
  }
  const fingerprint = await fingerprintOf(ctx, asToken(record))
  return fingerprint === undefined ? record : { ...record, fingerprint }
}

/** The intent as a token of its type (what its fingerprint is made from, as a token's would be). */
const asToken = (intent: StoredTokenIntent): StoredToken => ({
  id: intent.id,
  tenant_id: intent.tenant_id,
  type: intent.type,
  data: intent.data,
  containers: [],
  metadata: {},
  created_by: intent.created_by,
  created_at: intent.created_at,
})

/**
 * The caller's tenant's live intent `id` (opened): absent, another tenant's or past `expires_at`
 * (at that instant on) answers `notFound`, the same for all three.
 */
export async function liveIntent(ctx: Ctx, id: string): Promise<StoredTokenIntent> {
  if (id.length > 200) throw notFound('token intent')
  const intent = await ctx.store.getTokenIntent(ctx.principal.tenantId, id)
  if (!intent || intent.expires_at <= ctx.now()) throw notFound('token intent')
  return intent
}

/**
 * Token intent `id` as an expression naming it (`{{ token_intent: <id> }}`) sees it: the intent as
 * answered with its data (`$.data.number`, `$.data.cvc`), or `null` when it is absent, another
 * tenant's or expired. It is weighed as the token it would become by default (its type's
 * containers and mask: a card is in `/pci/high/`) under the caller's `permission` (`token:use` for
 * the proxy and reactor arguments, `token:read` for detokenize): the caller's rules and permissions
 * decide as for that token (`mask` shows the type's mask; no access, or `redact`, is 403), and the
 * use and the revealed plaintext are told to the call's audit as a token's are.
 */
export async function intentForUse(
  ctx: Ctx,
  id: string,
  permission: 'token:use' | 'token:read',
): Promise<Json | null> {
  if (id.length > 200) return null
  const intent = await ctx.store.getTokenIntent(ctx.principal.tenantId, id)
  if (!intent || intent.expires_at <= ctx.now()) return null
  // Weighed as the token it would become by default: its type's containers and mask.
  const rules = typeRules(intent.type)
  const token: StoredToken = { ...asToken(intent), containers: [...rules.containers] }
  if (rules.mask !== undefined) token.mask = rules.mask
  const transform = tokenAccess(ctx.principal, permission, token)
  if (transform === null) throw forbidden(`missing ${permission} access to token intent ${intent.id}`)
  const shown = applyTransform(token, transform, ctx.budget, ctx.principal)
  if (shown.data === undefined)
    throw forbidden(`${permission} access to token intent ${intent.id} shows no data (${transform})`)
  return { ...shownIntent(intent), data: shown.data } as unknown as Json
}

/**
 * The create body a token intent converts into (`token_intent_id` given instead of `type` and
 * `data`): the body's other fields with the intent's type and data, a card's `cvc` left out (the
 * reference: it is not moved to the token), and the op that deletes the intent in the token's
 * write. An intent that is gone or expired is a 400 naming `token_intent_id`.
 */
export async function convertedBody(
  ctx: Ctx,
  input: Record<string, unknown>,
  field = 'token_intent_id',
): Promise<{ body: Record<string, unknown>; consume: Op }> {
  const { token_intent_id: id, ...rest } = input
  // Its conversion deletes the intent in the token's write, which a transaction would only stage.
  if (ctx.transactionId !== undefined)
    throw invalid(
      field,
      'converts a token intent, which is not done inside a transaction: create the token outside it',
    )
  if (rest.type !== undefined || rest.data !== undefined)
    throw invalid(field, 'is given instead of type and data, not with them')
  if (typeof id !== 'string') throw invalid(field, 'must be a string')
  let intent: StoredTokenIntent
  try {
    intent = await liveIntent(ctx, id)
  } catch {
    throw invalid(field, 'names no token intent of this tenant that has not expired')
  }
  let data = intent.data
  if (intent.type === 'card' && isObject(data)) {
    const { cvc: _cvc, ...kept } = data
    data = kept
  }
  return {
    body: { ...rest, type: intent.type, data },
    consume: { op: 'token_intent.delete', tenant_id: intent.tenant_id, id: intent.id },
  }
}

/**
 * A token create body as `createToken` makes the token from: one naming `token_intent_id` converted
 * (see `convertedBody`) with the op that consumes the intent, any other as it is.
 */
export async function intentConverted(ctx: Ctx, input: unknown): Promise<{ body: unknown; consume?: Op }> {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return { body: input }
  const fields = input as Record<string, unknown>
  if (fields.token_intent_id === undefined) return { body: input }
  return convertedBody(ctx, fields)
}

/**
 * A tokenize request with each body naming `token_intent_id` converted (see `convertedBody`), and
 * the ops that consume those intents in the request's write. The walk stops where tokenize's does
 * (its depth, its count of token bodies), so tokenize itself refuses what is past them; an intent
 * named twice is a 400 naming the second.
 */
export async function intentsConvertedTree(ctx: Ctx, input: Json): Promise<{ tree: Json; consume: Op[] }> {
  const consume: Op[] = []
  const seen = new Set<string>()
  let bodies = 0
  const walk = async (node: Json, path: string, depth: number): Promise<Json> => {
    if (depth > MAX_TOKENIZE_DEPTH || (!isObject(node) && !Array.isArray(node))) return node
    const at = (key: string | number) => (path ? `${path}.${key}` : String(key))
    if (Array.isArray(node)) {
      const out: Json[] = []
      for (const [i, item] of node.entries()) out.push(await walk(item, at(i), depth + 1))
      return out
    }
    if (node.token_intent_id !== undefined) {
      if (++bodies > MAX_TOKENIZE) return node
      const field = at('token_intent_id')
      if (typeof node.token_intent_id === 'string' && seen.has(node.token_intent_id))
        throw invalid(field, 'names a token intent another body of this request converts')
      const { body, consume: op } = await convertedBody(ctx, node, field)
      seen.add(node.token_intent_id as string)
      consume.push(op)
      return body as Json
    }
    const out: JsonObject = {}
    for (const [key, value] of Object.entries(node))
      Object.defineProperty(out, key, {
        value: await walk(value, at(key), depth + 1),
        enumerable: true,
        writable: true,
      })
    return out
  }
  return { tree: await walk(input, '', 0), consume }
}

/**
 * What a write converting intents adds (`writeTokens`' `extra`): each intent's delete, guarded by
 * its presence, so that of two conversions of one intent racing each other one writes and the
 * other is refused (400 naming `token_intent_id`), making no token.
 */
export function consumedIntents(consume: readonly Op[]): { checks: Check[]; ops: Op[] } {
  const checks = consume.flatMap((op): Check[] =>
    op.op === 'token_intent.delete'
      ? [{ check: 'token_intent.present', tenant_id: op.tenant_id, id: op.id }]
      : [],
  )
  return { checks, ops: [...consume] }
}

/** Token intent create, get and delete for one caller. */
export function tokenIntentOperations(ctx: Ctx) {
  return {
    /**
     * Creates a token intent from `{ type, data }` (`token-intent:create`): the data checked as a
     * token's of that type, sealed at rest, answered without it; it expires a day later.
     */
    async create(input: CreateTokenIntentInput): Promise<TokenIntent> {
      requirePermission(ctx.principal, 'token-intent:create')
      // A browser's encrypted data (`encrypted`, a JWE to a client key) is decrypted first.
      const intent = await newIntent(ctx, parseTokenIntentInput(await decryptedBody(ctx, input)))
      await ctx.store.write({ ops: [{ op: 'token_intent.put', intent }] })
      return shownIntent(intent)
    },

    /** Reads a token intent (`token-intent:read`), without its data. Expired or absent → not found. */
    async get(id: string): Promise<TokenIntent> {
      requirePermission(ctx.principal, 'token-intent:read')
      return shownIntent(await liveIntent(ctx, id))
    },

    /** Deletes a token intent before it expires (`token-intent:delete`). Expired or absent → not found. */
    async delete(id: string): Promise<void> {
      requirePermission(ctx.principal, 'token-intent:delete')
      const intent = await liveIntent(ctx, id)
      await ctx.store.write({
        ops: [{ op: 'token_intent.delete', tenant_id: intent.tenant_id, id: intent.id }],
      })
    },
  }
}

/** Body of `tokenIntents.create`: `{ type, data }`, `data` under the type's rules. */
export type CreateTokenIntentInput = v.InferInput<typeof createTokenIntentInput>

/**
 * Body of `tokens.create` converting a token intent: `token_intent_id` in place of `type` and
 * `data`, with any other field of a create body.
 */
export type ConvertTokenIntentInput = Omit<
  v.InferInput<typeof createTokenInput>,
  'type' | 'data' | 'token_intent_id'
> & {
  token_intent_id: string
}
