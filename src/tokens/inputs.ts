/**
 * The inputs of the token methods, each derived from the schema that validates it
 * (`v.InferInput`), so a misspelled field or a wrong type fails to compile. The schemas still check
 * every input at run time: JavaScript callers and HTTP requests may send anything.
 */
import type * as v from 'valibot'
import type { Json } from '../kernel/index.js'
import type { listV2Input, searchInput, searchV2Input } from '../search/index.js'
import type { createTokenInput, listChildrenInput, updateTokenInput } from './schemas.js'

/**
 * Body of `tokens.create` and `tokens.children.create`; `tokens.create` also takes `encrypted` (a
 * JWE to a client encryption key) in place of `data`.
 */
export type CreateTokenInput =
  | v.InferInput<typeof createTokenInput>
  | (Omit<v.InferInput<typeof createTokenInput>, 'data'> & { encrypted: string })
/** Body of `tokens.update`: a JSON merge patch (`null` removes a field; `data` can't be removed). */
export type UpdateTokenInput = v.InferInput<typeof updateTokenInput>
/**
 * Body of `tokens.tokenize`: any JSON, in which each token create body (`{ type, data, … }`)
 * becomes a token and each other value a `token`-type token.
 */
export type TokenizeInput = Json
/** Body of `tokens.detokenize`: any JSON holding `{{ <token id> }}` expressions. */
export type DetokenizeInput = Json
/**
 * Metadata filters in the form the SDKs send in a query string: `metadata.<key>` (or
 * `metadata[<key>]`) → value, gathered into `metadata`.
 */
export type FlatMetadataFilter = { [key: `metadata.${string}` | `metadata[${string}]`]: string }
/**
 * Query of `tokens.list`: filters `id`, `type` and `metadata` (key → value, or flat as
 * `metadata.<key>`), and `page`, `size`.
 */
export type ListTokensQuery = v.InferInput<typeof listChildrenInput> & FlatMetadataFilter
/** Query of `tokens.listV2`: filters `type`, `container`, `metadata` (JSON), `fingerprint`; cursor `start`, `size`. */
export type ListTokensV2Query = v.InferInput<typeof listV2Input>
/** Body of `tokens.search`: a `query` (Lucene-style), `page` and `size`. */
export type SearchTokensInput = v.InferInput<typeof searchInput>
/** Body of `tokens.searchV2`: a `query`, cursor `start` and `size` (or `page: { start, size }`). */
export type SearchTokensV2Input = v.InferInput<typeof searchV2Input>
/** Query of `tokens.children.list`: as `tokens.list`'s. */
export type ListChildrenQuery = ListTokensQuery
