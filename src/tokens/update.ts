import type * as v from 'valibot'
import { requireTokenAccess, shownUnderRead } from '../applications/index.js'
import type { Ctx } from '../call/index.js'
import { checkFailure, retryCas } from '../call/index.js'
import { compileTemplate } from '../expressions/index.js'
import type { Json, StoredToken, Token } from '../kernel/index.js'
import { invalid, parse } from '../kernel/index.js'
import { withSearchIndexes } from '../search/index.js'
import type { Check } from '../store/index.js'
import {
  deletionsWithLinks,
  enlist,
  mustReadToken,
  openTransaction,
  stagedToken,
  tryWriteAs,
} from '../transactions/index.js'
import { patchGivesCvc, withCvcDeadline } from './card-cvc.js'
import { checkTokenContents, requireFuture } from './create.js'
import type { UpdateTokenInput } from './inputs.js'
import { updateTokenInput } from './schemas.js'
import { fingerprinted, typeRules } from './token-types.js'
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

/** Applies a merge patch to a token (see `tokenOperations().update`). */
export async function updateToken(ctx: Ctx, id: string, input: UpdateTokenInput): Promise<Token> {
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
    const retry = result.failed.check === 'token.unchanged' || result.failed.check === 'transaction.unchanged'
    if (!retry) throw checkFailure(result.failed)
    return { lost: result.failed }
  })
}

/** Deletes a token and every association it is part of. */
export async function deleteToken(ctx: Ctx, id: string): Promise<void> {
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
}
