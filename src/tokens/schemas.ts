import * as v from 'valibot'
import {
  containerPath,
  isoDateTime,
  mapKey,
  pagination,
  sealedJson,
  stringList,
  withoutForbiddenKeys,
} from '../kernel/index.js'
import { MAX_INDEX_EXPRESSION, MAX_SEARCH_INDEXES } from '../search/index.js'

/** A token id: given by the client (letters, digits, `_`, `-`, `.`, `:`, `~`; ≤ 200) or a UUID. */
export const tokenId = v.pipe(
  v.string(),
  v.minLength(1, 'must not be empty'),
  v.maxLength(200, 'must be at most 200 characters'),
  v.regex(/^[A-Za-z0-9_-][A-Za-z0-9._:~-]*$/, 'may hold only letters, digits and . _ : ~ -'),
)

const tokenType = v.pipe(
  v.string(),
  v.minLength(1, 'must not be empty'),
  v.maxLength(50, 'must be at most 50 characters'),
  v.regex(/^[A-Za-z0-9_.:-]+$/, 'may hold only letters, digits and _ . : -'),
)

const data = v.pipe(
  sealedJson,
  v.check((d) => d !== null, 'is required'),
)

const containers = v.pipe(
  v.array(containerPath),
  v.minLength(1, 'must hold at least one container'),
  v.maxLength(20, 'must hold at most 20 containers'),
  v.transform((list) => [...new Set(list)]),
)

const metadata = v.pipe(
  withoutForbiddenKeys<Record<string, string>>(),
  v.record(mapKey(100), v.pipe(v.string(), v.maxLength(1000, 'must be at most 1000 characters'))),
  v.check((m) => Object.keys(m).length <= 100, 'must hold at most 100 entries'),
)

/** Search index expressions (`{{ data.number | last4 }}`), evaluated over `data` on every write. */
const searchIndexes = v.pipe(
  v.array(
    v.pipe(
      v.string(),
      v.minLength(1, 'must not be empty'),
      v.maxLength(MAX_INDEX_EXPRESSION, `must be at most ${MAX_INDEX_EXPRESSION} characters`),
    ),
  ),
  v.maxLength(MAX_SEARCH_INDEXES, `must hold at most ${MAX_SEARCH_INDEXES} expressions`),
  v.transform((list) => [...new Set(list)]),
)

/** An expression (see `src/expressions/ (parse.ts)`): checked further when the token is made. */
const expression = v.pipe(v.string(), v.maxLength(4096, 'must be at most 4096 characters'))

/**
 * Body of token create and child create: Basis Theory's Create Token fields. `token_intent_id` is
 * taken by token create before this schema (see `convertedBody`): one reaching it (a child create)
 * is refused.
 */
export const createTokenInput = v.strictObject({
  id: v.optional(tokenId),
  type: tokenType,
  data,
  containers: v.optional(containers),
  metadata: v.optional(metadata),
  mask: v.optional(sealedJson),
  fingerprint_expression: v.optional(v.nullable(expression)),
  search_indexes: v.optional(searchIndexes),
  deduplicate_token: v.optional(v.nullable(v.boolean())),
  expires_at: v.optional(v.nullable(isoDateTime)),
  token_intent_id: v.optional(
    v.pipe(
      v.unknown(),
      v.check(() => false, 'converts a token intent on token create only: give type and data here'),
    ),
  ),
})

/** Body of token intent create: the token type and the data it will hold (no other field). */
export const createTokenIntentInput = v.strictObject({ type: tokenType, data })

/** Body of token update, a JSON merge patch: `null` removes a field (data can't be removed). */
export const updateTokenInput = v.strictObject({
  data: v.optional(data),
  containers: v.optional(v.nullable(containers)),
  metadata: v.optional(
    v.nullable(
      v.pipe(
        withoutForbiddenKeys<Record<string, string | null>>(),
        v.record(
          mapKey(100),
          v.nullable(v.pipe(v.string(), v.maxLength(1000, 'must be at most 1000 characters'))),
        ),
      ),
    ),
  ),
  mask: v.optional(sealedJson),
  fingerprint_expression: v.optional(v.nullable(expression)),
  search_indexes: v.optional(v.nullable(searchIndexes)),
  deduplicate_token: v.optional(v.nullable(v.boolean())),
  expires_at: v.optional(v.nullable(isoDateTime)),
})

/** Query of list children: filters `id`, `type` and `metadata` (key → value), and paging. */
export const listChildrenInput = v.strictObject({
  id: stringList(100),
  type: stringList(100),
  metadata: v.optional(
    v.pipe(
      withoutForbiddenKeys<Record<string, string>>(),
      v.record(mapKey(100), v.pipe(v.string(), v.maxLength(1000, 'must be at most 1000 characters'))),
      v.check((m) => Object.keys(m).length <= 20, 'must hold at most 20 entries'),
    ),
  ),
  ...pagination,
})

const METADATA_KEY = /^metadata(?:\.(.+)|\[(.+)\])$/

/**
 * Gathers the query keys `metadata.<key>=<value>` (what the SDK sends) and `metadata[<key>]=<value>`
 * (OpenAPI's deepObject) into one `metadata` object; of a repeated key the first value counts, as
 * the reference ignores repeats. Other keys pass through unchanged.
 */
export function gatherMetadataFilter(query: unknown): unknown {
  if (query === null || typeof query !== 'object' || Array.isArray(query)) return query
  const out: Record<string, unknown> = {}
  let metadata: Record<string, unknown> | undefined
  for (const [key, value] of Object.entries(query)) {
    const m = METADATA_KEY.exec(key)
    if (!m) {
      out[key] = value
      continue
    }
    metadata ??= Object.create(null) as Record<string, unknown>
    const name = (m[1] ?? m[2])!
    if (!(name in metadata)) metadata[name] = Array.isArray(value) ? value[0] : value
  }
  if (!metadata) return out
  const given = out.metadata
  if (given === undefined) out.metadata = { ...metadata }
  else if (given !== null && typeof given === 'object' && !Array.isArray(given)) {
    out.metadata = { ...given, ...metadata }
  }
  return out
}
