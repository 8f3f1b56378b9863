import type * as v from 'valibot'
import { applyTransform, requireTokenAccess, shownUnderRead, tokenAccess } from '../applications/index.js'
import { compileTemplate } from '../expressions/index.js'
import type { Check, Ctx, Json, StoredToken, Token, TokenTree } from '../kernel/index.js'
import {
  type CursorPage,
  checkFailure,
  forbidden,
  invalid,
  type Paginated,
  paginated,
  parse,
  rangeOf,
  retryCas,
  ServiceError,
} from '../kernel/index.js'
import {
  listTokensV1,
  listTokensV2,
  pageTooLarge,
  searchTokensV1,
  searchTokensV2,
  withSearchIndexes,
} from '../search/index.js'
import {
  deletionsWithLinks,
  enlist,
  mustReadToken,
  openTransaction,
  stagedToken,
  tryWriteAs,
} from '../transactions/index.js'
import { patchGivesCvc, withCvcDeadline } from './card-cvc.js'
import { checkTokenContents, createdAnswer, creationChecks, newToken, requireFuture } from './create.js'
import { writeTokens } from './dedup.js'
import { detokenize } from './detokenize.js'
import type {
  CreateTokenInput,
  DetokenizeInput,
  ListTokensQuery,
  ListTokensV2Query,
  SearchTokensInput,
  SearchTokensV2Input,
  TokenizeInput,
  UpdateTokenInput,
} from './inputs.js'
import { gatherMetadataFilter, listChildrenInput, updateTokenInput } from './schemas.js'
import { fingerprinted, fingerprintedNew, typeRules } from './token-types.js'
import { planTokenize } from './tokenize.js'
import {
  overStoredData,
  overStoredDataAsync,
  requireVisibilityKept,
  type VisibilityFields,
} from './visibility.js'

/** RFC 7396 JSON merge patch of `patch` onto `target`. */
export function mergePatch(target: Json | undefined, patch: Json): Json {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch
  const base: Record<string, Json> =
    target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...target } : {}
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete base[key]
    else
      Object.defineProperty(base, key, {
        value: mergePatch(Object.hasOwn(base, key) ? base[key] : undefined, value),
        enumerable: true,
        writable: true,
        configurable: true,
      })
  }
  return base
}

type UpdatePatch = v.InferOutput<typeof updateTokenInput>

/**
 * What a patch leaves of the fields that decide what readers see of `current` (`null` puts back the
 * type's default: for masks of `token`, none), computed without evaluating anything.
 */
function patchedVisibility(current: StoredToken, patch: UpdatePatch): VisibilityFields {
  const rules = typeRules(current.type)
  return {
    mask: patch.mask === undefined ? current.mask : patch.mask === null ? rules.mask : patch.mask,
    containers:
      patch.containers === undefined ? current.containers : (patch.containers ?? [...rules.containers]),
    fingerprint_expression:
      patch.fingerprint_expression === undefined
        ? current.fingerprint_expression
        : (patch.fingerprint_expression ?? undefined),
    search_indexes:
      patch.search_indexes === undefined ? current.search_indexes : (patch.search_indexes ?? undefined),
  }
}

/**
 * `current` with a validated merge patch applied (`null` removes; `data` can't be removed). The
 * data is stored: an expression that fails on it answers without quoting it (`overStoredData`).
 */
function patched(current: StoredToken, patch: UpdatePatch): StoredToken {
  const {
    mask: _mask,
    expires_at: _expiresAt,
    modified_by: _by,
    modified_at: _at,
    fingerprint_expression: _fpe,
    ...kept
  } = current
  const fields = patchedVisibility(current, patch)
  const mask = fields.mask
  const fpe = fields.fingerprint_expression
  const expiresAt = patch.expires_at === undefined ? current.expires_at : (patch.expires_at ?? undefined)
  const next: StoredToken = {
    ...kept,
    data: patch.data === undefined ? current.data : mergePatch(current.data, patch.data),
    containers: [...fields.containers],
    metadata:
      patch.metadata === undefined
        ? current.metadata
        : patch.metadata === null
          ? {}
          : (mergePatch(current.metadata, patch.metadata) as Record<string, string>),
    ...(mask === undefined ? {} : { mask }),
    ...(fpe === undefined ? {} : { fingerprint_expression: fpe }),
    ...(expiresAt === undefined ? {} : { expires_at: expiresAt }),
  }
  if (next.data === null) throw invalid('data', 'is required')
  checkTokenContents(next, true)
  const { search_indexes: indexes, search_index_values: _v, search_index_hashes: hashes, ...rest } = next
  if (patch.search_indexes === undefined && patch.data === undefined) {
    // Neither the expressions nor the data changed: the stored hashes still hold.
    return {
      ...rest,
      ...(indexes ? { search_indexes: indexes } : {}),
      ...(hashes ? { search_index_hashes: hashes } : {}),
    }
  }
  // A caller's new expressions are parsed first, so a syntax error still quotes (only) them.
  for (const [i, e] of (fields.search_indexes ?? []).entries())
    compileTemplate(e, `search_indexes.${i}`, next.tenant_id)
  return overStoredData(() => withSearchIndexes(rest, fields.search_indexes))
}

/** Throws `forbidden` unless the caller may read some token (the permission, or a rule granting it). */
function requireAnyRead(ctx: Ctx): void {
  const { permissions, rules } = ctx.principal
  if (!permissions.includes('token:read') && !rules?.some((r) => r.permissions.includes('token:read'))) {
    throw forbidden('missing permission token:read')
  }
}

/** Token create, get, update and delete for one caller. */
export function tokenOperations(ctx: Ctx) {
  return {
    /** Creates a token (enlists in the caller's transaction). Duplicate id → conflict. */
    async create(input: CreateTokenInput): Promise<Token> {
      const minted: string[] = []
      const token = await fingerprintedNew(ctx, newToken(ctx, input, minted))
      const [created] = await writeTokens(
        ctx,
        [token],
        (tx, written) =>
          creationChecks(
            ctx,
            tx,
            written.map((t) => t.id),
          ),
        { enlist: true, minted },
      )
      return createdAnswer(ctx, created!)
    },

    /**
     * Tokenizes a request of any JSON shape, as Basis Theory's Tokenize endpoint does: each token
     * create body becomes a token (answered with `data` under its mask), each plain value a
     * `token`-type token (answered by its id), in the request's shape; at most 100 tokens, all in
     * one atomic write (enlisted in the caller's transaction). A bad body: `validation_failed`
     * naming its path; nothing is written.
     */
    async tokenize(input: TokenizeInput): Promise<TokenTree> {
      if (input === undefined)
        throw invalid('body', 'is required: a token create body, or any JSON shape holding them')
      const refuse = (message: string, path: string) =>
        new ServiceError('validation_failed', message, { issues: { [path]: [message] } })
      const { tokens, minted, answer } = planTokenize(ctx, input as Json, { root: '', refuse })
      const ready = await Promise.all(tokens.map((t) => fingerprintedNew(ctx, t)))
      const created = await writeTokens(
        ctx,
        ready,
        (tx, written) =>
          creationChecks(
            ctx,
            tx,
            written.map((t) => t.id),
          ),
        { enlist: true, minted },
      )
      const byId = new Map(tokens.map((t, i) => [t.token.id, created[i]!]))
      return answer((token) => createdAnswer(ctx, byId.get(token.id)!))
    },

    /**
     * Replaces the detokenization expressions in any JSON value, as Basis Theory's Detokenize
     * endpoint does: `{{ <token id> }}` by the token's data, `{{ token: <token id> }}` by the whole
     * token, each under the caller's `token:read` transform (403 without it; 400 for a token that
     * does not exist or a filter expression); at most 100 tokens. Reads see the caller's transaction.
     */
    async detokenize(input: DetokenizeInput): Promise<Json> {
      if (input === undefined)
        throw invalid('body', 'is required: any JSON holding {{ <token id> }} expressions')
      // The endpoint is token:read's, whatever the body holds (each token is checked again below).
      requireAnyRead(ctx)
      const tx = await openTransaction(ctx)
      return detokenize(ctx, input as Json, { root: 'body', permission: 'token:read', tx })
    },

    /**
     * Lists the tenant's tokens the caller may read, ordered by id, each under its read transform;
     * filters `id` and `type` (lists) and `metadata` (`metadata.<key>=<value>`: exact but for
     * case, ANDed); `page` and `size`. With the transaction header, the transaction's view.
     */
    async list(query: ListTokensQuery = {}): Promise<Paginated<Token>> {
      const q = parse(listChildrenInput, gatherMetadataFilter(query ?? {}))
      requireAnyRead(ctx)
      const tx = await openTransaction(ctx)
      const tenant = ctx.principal.tenantId
      const { offset } = rangeOf(q)
      const show = (token: StoredToken) => {
        const transform = tokenAccess(ctx.principal, 'token:read', token)
        return transform === null ? null : applyTransform(token, transform, ctx.budget)
      }
      const filter = { ids: q.id, types: q.type, now: ctx.now() }
      if (!tx && !ctx.principal.rules?.length && q.metadata === undefined) {
        const page = await ctx.store.listTokens(tenant, { offset, limit: q.size, ...filter })
        // A store ends a page of large tokens early (within 4 MiB): offset pages can't go on from there.
        if (page.items.length < Math.min(q.size, page.total - offset)) throw pageTooLarge('size')
        const items = page.items.map(show).filter((t): t is Token => t !== null)
        return paginated({ items, total: page.total }, q.page, q.size)
      }
      // Rules, metadata or a transaction decide per token: walk the view (heads only), count, page.
      return listTokensV1(ctx, tx, q)
    },

    /**
     * Lists the tenant's tokens the caller may read with cursor pagination (`start`, `size`),
     * filtered by `type`, `container`, `metadata` (JSON) and `fingerprint`: see `listTokensV2`.
     */
    async listV2(query: ListTokensV2Query = {}): Promise<CursorPage<Token>> {
      requireAnyRead(ctx)
      return listTokensV2(ctx, query)
    },

    /**
     * Searches the tenant's tokens (`POST /tokens/search`): `{ query, page, size }`, answered as a
     * page like `list`. Needs `token:search`; see `parseQuery` for the query language.
     */
    async search(input: SearchTokensInput = {}): Promise<Paginated<Token>> {
      return searchTokensV1(ctx, input)
    },

    /**
     * Searches the tenant's tokens with cursor pagination (`POST /v2/tokens/search`):
     * `{ query, start, size }` (or `page: { start, size }`), answered like `listV2`.
     */
    async searchV2(input: SearchTokensV2Input = {}): Promise<CursorPage<Token>> {
      return searchTokensV2(ctx, input)
    },

    /** Reads a token under the caller's read transform. Expired or absent → not found. */
    async get(id: string): Promise<Token> {
      const tx = await openTransaction(ctx)
      const token = await mustReadToken(ctx, tx, id)
      return applyTransform(token, requireTokenAccess(ctx.principal, 'token:read', token), ctx.budget)
    },

    /**
     * Applies a merge patch to `data`, `metadata`, `containers`, `mask`, `fingerprint_expression`,
     * `search_indexes` and `expires_at`. Changing what decides visibility needs reveal access
     * (`requireVisibilityKept`); the answer is the token under the caller's own read access.
     */
    async update(id: string, input: UpdateTokenInput): Promise<Token> {
      const patch = parse(updateTokenInput, input)
      requireFuture(ctx, patch.expires_at)
      // Read, merge, compare-and-set: a concurrent write in between makes this merge again on top of it.
      return retryCas(async () => {
        const tx = await openTransaction(ctx)
        const current = await mustReadToken(ctx, tx, id)
        requireTokenAccess(ctx.principal, 'token:update', current)
        // Before anything is evaluated on the stored data: a refusal tells nothing of it.
        const fields = patchedVisibility(current, patch)
        requireTokenAccess(ctx.principal, 'token:update', { id, containers: [...fields.containers] })
        requireVisibilityKept(ctx.principal, current, fields, patch)
        const merged = withCvcDeadline(patched(current, patch), ctx.now(), patchGivesCvc(patch.data))
        const next: StoredToken = await overStoredDataAsync(() =>
          fingerprinted(ctx, { ...merged, modified_by: ctx.principal.id, modified_at: ctx.now() }),
        )
        const unchanged: Check[] =
          (await stagedToken(ctx, tx, id)) === undefined
            ? [{ check: 'token.unchanged', tenant_id: current.tenant_id, id, token: current }]
            : []
        const result = await tryWriteAs(ctx, tx, {
          checks: unchanged,
          ops: [{ op: 'token.put', token: next }],
          locks: [id],
        })
        // Shown as the caller's own read shows the token stored: never more than a read would.
        if (result.ok) return { done: shownUnderRead(ctx.principal, next) }
        const retry =
          result.failed.check === 'token.unchanged' || result.failed.check === 'transaction.unchanged'
        if (!retry) throw checkFailure(result.failed)
        return { lost: result.failed }
      })
    },

    /** Deletes a token and every association it is part of. */
    async delete(id: string): Promise<void> {
      await enlist(ctx, async (tx) => {
        const current = await mustReadToken(ctx, tx, id)
        requireTokenAccess(ctx.principal, 'token:delete', current)
        const present: Check[] = (await stagedToken(ctx, tx, id))
          ? []
          : [{ check: 'token.present', tenant_id: current.tenant_id, id }]
        // Staged, the delete takes the token's links with it at commit; at once, it does now.
        const deletion = tx
          ? { checks: [], ops: [{ op: 'token.delete' as const, tenant_id: current.tenant_id, id }] }
          : await deletionsWithLinks(ctx.store, current.tenant_id, [id])
        return { checks: [...present, ...deletion.checks], ops: deletion.ops, locks: [id] }
      })
    },
  }
}
