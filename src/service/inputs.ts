/**
 * The inputs of the client's and the admin's methods, each derived from the schema that validates
 * it (`v.InferInput`), so a misspelled field or a wrong type fails to compile. The schemas still
 * check every input at run time: JavaScript callers and HTTP requests may send anything.
 */
import type * as v from 'valibot'
import type {
  createApplicationInput,
  createTenantInput,
  listInput,
  listPermissionsInput,
  updateApplicationInput,
} from '../applications/index.js'
import type { Json } from '../kernel/index.js'
import type {
  createReactorInput,
  formulaInput,
  listFormulasInput,
  listReactorsInput,
  patchReactorInput,
  reactInput,
  updateReactorInput,
} from '../reactors/index.js'
import type { listV2Input, searchInput, searchV2Input } from '../search/index.js'
import type { authorizeSessionInput } from '../sessions/index.js'
import type { createTokenInput, listChildrenInput, updateTokenInput } from '../tokens/index.js'

/** Body of `tokens.create` and `tokens.children.create`. */
export type CreateTokenInput = v.InferInput<typeof createTokenInput>
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

/** A body that must be empty when given: absent, `null` or `{}` (`transactions.create`, `sessions.create`). */
export type EmptyInput = Record<string, never> | null | undefined

/** Body of `sessions.authorize`. */
export type AuthorizeSessionInput = v.InferInput<typeof authorizeSessionInput>

/** Body of `applications.create`. */
export type CreateApplicationInput = v.InferInput<typeof createApplicationInput>
/** Body of `applications.update`: replaces name, permissions and rules. */
export type UpdateApplicationInput = v.InferInput<typeof updateApplicationInput>
/** Query of `applications.list`: filter `id` (one or several), and `page`, `size`. */
export type ListApplicationsQuery = v.InferInput<typeof listInput>

/** The body of a formula create or update, of either type. */
type FormulaBody = v.InferInput<typeof formulaInput>
/** Body of `reactorFormulas.create` and `reactorFormulas.update`: a private formula. */
export type ReactorFormulaInput = Omit<FormulaBody, 'type'> & { type: 'private' }
/** Body of `admin.createOfficialFormula` and `admin.updateOfficialFormula`: an official formula. */
export type OfficialFormulaInput = Omit<FormulaBody, 'type'> & { type: 'official' }
/** Query of `reactorFormulas.list`: `name` (wildcard filter), and `page`, `size`. */
export type ListReactorFormulasQuery = v.InferInput<typeof listFormulasInput>

/** Body of `reactors.create`: a formula (`formula: { id }` or `formula_id`) or inline `code`. */
export type CreateReactorInput = v.InferInput<typeof createReactorInput>
/** Body of `reactors.update` (PUT): replaces the reactor; without formula or code it keeps its own. */
export type UpdateReactorInput = v.InferInput<typeof updateReactorInput>
/** Body of `reactors.patch`: a JSON merge patch of the reactor. */
export type PatchReactorInput = v.InferInput<typeof patchReactorInput>
/** Body of `reactors.react`: `args` for the reactor's code. */
export type ReactInput = v.InferInput<typeof reactInput>
/** Query of `reactors.list`: `name` (wildcard filter), `id` (one or several), and `page`, `size`. */
export type ListReactorsQuery = v.InferInput<typeof listReactorsInput>

/** Query of `permissions.list`: `application_type` filters. */
export type ListPermissionsQuery = v.InferInput<typeof listPermissionsInput>

/** Input of `admin.createTenant`. */
export type CreateTenantInput = v.InferInput<typeof createTenantInput>
/**
 * Input of `admin.createApplication`: an application create body, the tenant, and optionally the
 * key itself (`key_` and 24 or more of A-Z a-z 0-9 _ -).
 */
export type AdminCreateApplicationInput = CreateApplicationInput & { tenantId: string; key?: string }
