import * as v from 'valibot'
import { containerPath, pagination, stringList } from '../kernel/index.js'
import { MAX_QUERY_LENGTH } from './query.js'

const query = v.optional(
  v.nullable(
    v.pipe(v.string(), v.maxLength(MAX_QUERY_LENGTH, `must be at most ${MAX_QUERY_LENGTH} characters`)),
  ),
)
const cursor = v.optional(v.nullable(v.pipe(v.string(), v.maxLength(400, 'must be at most 400 characters'))))
const size = v.optional(v.nullable(pagination.size))

/** Body of `POST /tokens/search` (none: every token, first page). */
export const searchInput = v.optional(
  v.strictObject({
    query,
    page: v.optional(v.nullable(pagination.page)),
    size,
  }),
  {},
)

/**
 * Body of `POST /v2/tokens/search`: `query`, and `start` (the previous page's `pagination.next`)
 * and `size`, given at the top level (as the SDKs send them) or as `page: { start, size }`.
 */
export const searchV2Input = v.optional(
  v.strictObject({
    query,
    start: cursor,
    size,
    page: v.optional(v.nullable(v.strictObject({ start: cursor, size }))),
  }),
  {},
)

/** The query of `GET /v2/tokens`. */
export const listV2Input = v.strictObject({
  type: stringList(100),
  container: v.optional(containerPath),
  fingerprint: v.optional(v.pipe(v.string(), v.maxLength(200, 'must be at most 200 characters'))),
  metadata: v.optional(v.pipe(v.string(), v.maxLength(25_000, 'must be at most 25000 characters'))),
  start: v.optional(v.pipe(v.string(), v.maxLength(400, 'must be at most 400 characters'))),
  size: pagination.size,
})
