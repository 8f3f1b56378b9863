import { applyTransform, requireTokenAccess, withMaskedData } from '../applications/index.js'
import type { Ctx } from '../call/index.js'
import { applyMask, checkMask, compileTemplate, renderTemplate } from '../expressions/index.js'
import type { Json, StoredToken, StoredTransaction, Token } from '../kernel/index.js'
import { conflict, expressionBudget, invalid, newOrderedId, parse, withTokenFields } from '../kernel/index.js'
import { withSearchIndexes } from '../search/index.js'
import type { Check } from '../store/index.js'
import { stagedOf } from '../transactions/index.js'
import { withCvcDeadline } from './card-cvc.js'
import { type Created, type NewToken, shownDuplicate } from './dedup.js'
import { createTokenInput } from './schemas.js'
import { typeRules } from './token-types.js'
import { overStoredData } from './visibility.js'

/**
 * The one way a token is made: a create body becomes a token record (`newToken`), its id is checked
 * free (`creationChecks`) and its creator is answered (`createdAnswer`). Create, tokenize, children
 * and react's tokenize all go through here.
 */
/** Containers a `token` (or free-form) token gets when none are given; see `TOKEN_TYPES` for the others. */
export const DEFAULT_CONTAINERS = ['/general/high/']

/**
 * The caller's view of a token it just created (create and tokenize answers): `data` under the
 * implicit transform of `token:create`, `mask` — the token's mask, or no `data` when it has none —
 * whatever the caller may read, as Basis Theory answers them. The data is the caller's own input,
 * so this shows it nothing it did not give. An update's answer is the token under the caller's
 * own read access instead (`shownUnderRead`): there the data is stored, not given.
 */
export function shownToCaller(token: StoredToken, masked?: Json): Token {
  // `masked`: the token's mask as `checkTokenContents` evaluated it on this data (not again).
  if (token.mask !== undefined && masked !== undefined) return withMaskedData(token, masked)
  return applyTransform(token, 'mask')
}

export function requireFuture(ctx: Ctx, expiresAt: string | undefined | null) {
  if (expiresAt && expiresAt <= ctx.now()) throw invalid('expires_at', 'must be in the future')
}

/**
 * Checks what a token's expressions and data make together: its data against its type, its mask
 * evaluates on its data, its fingerprint expression renders (400 naming the field
 * otherwise), all within `budget` (the call's, shared by every token it writes; default one for
 * this token). The fingerprint itself is made by `fingerprinted`, which needs the tenant key. With
 * `stored`, the data is (partly) stored rather than the caller's: an evaluation's failure then
 * names the field but not its reason, which could quote the data (`overStoredData`).
 * Answers what the mask evaluated to (undefined without a mask).
 */
export function checkTokenContents(
  token: StoredToken,
  stored = false,
  budget = expressionBudget(),
): Json | undefined {
  typeRules(token.type).validate(token.data)
  const evaluate = stored ? overStoredData : <T>(f: () => T): T => f()
  let masked: Json | undefined
  if (token.mask !== undefined && token.mask !== null) {
    const mask = token.mask
    checkMask(mask, 'mask', token.tenant_id)
    masked = evaluate(() => applyMask(mask, token.data, 'mask', budget, token.tenant_id))
  }
  const fpe = token.fingerprint_expression
  if (fpe !== undefined) {
    compileTemplate(fpe, 'fingerprint_expression', token.tenant_id)
    evaluate(() =>
      renderTemplate(
        fpe,
        { data: token.data, metadata: token.metadata },
        'fingerprint_expression',
        budget,
        token.tenant_id,
      ),
    )
  }
  return masked
}

/**
 * Validates a create body into a new token record (not yet written, not yet fingerprinted: see
 * `fingerprinted`); checks `token:create` access. The type's rules give the data validation and
 * the containers and mask when none are given (`TOKEN_TYPES`). An id it makes (the body gave none)
 * is pushed onto `minted`: see `CallerWrite.minted`.
 */
export function newToken(ctx: Ctx, input: unknown, minted?: string[]): NewToken {
  const body = parse(createTokenInput, input)
  const id = body.id ?? newOrderedId(ctx.now(), ctx.principal.tenantId)
  if (id !== body.id) minted?.push(id)
  const expiresAt = body.expires_at ?? undefined
  requireFuture(ctx, expiresAt)
  const rules = typeRules(body.type)
  const mask = body.mask === undefined ? rules.mask : body.mask
  const given = withTokenFields(EMPTY_TOKEN, {
    id,
    tenant_id: ctx.principal.tenantId,
    type: body.type,
    data: body.data,
    containers: body.containers ?? [...rules.containers],
    metadata: body.metadata ?? {},
    mask,
    fingerprint_expression: body.fingerprint_expression ?? undefined,
    expires_at: expiresAt,
    created_by: ctx.principal.id,
    created_at: ctx.now(),
  })
  const token = withCvcDeadline(given, ctx.now(), true)
  const masked = checkTokenContents(token, false, ctx.budget)
  requireTokenAccess(ctx.principal, 'token:create', token)
  const indexed = withSearchIndexes(token, body.search_indexes, ctx.budget)
  const deduplicate = body.deduplicate_token === true
  return masked === undefined ? { token: indexed, deduplicate } : { token: indexed, deduplicate, masked }
}

/** What `newToken` builds on: every field is given. */
const EMPTY_TOKEN: StoredToken = {
  id: '',
  tenant_id: '',
  type: '',
  data: null,
  containers: [],
  metadata: {},
  created_by: '',
  created_at: '',
}

/** The answer to a create: the new token as its creator sees it, or the duplicate that answered instead. */
export function createdAnswer(ctx: Ctx, created: Created): Token {
  const { requested } = created
  const shown = created.deduplicated
    ? shownDuplicate(ctx, created.token)
    : shownToCaller(created.token, requested.masked)
  return requested.deduplicate || created.deduplicated
    ? { ...shown, _extras: { deduplicated: created.deduplicated } }
    : shown
}

/**
 * The checks that creating the tokens `ids` needs: each id is free, both committed and as the
 * caller's transaction sees it (a token the transaction deleted may be created again in it).
 */
export async function creationChecks(
  ctx: Ctx,
  tx: StoredTransaction | null,
  ids: readonly string[],
): Promise<{ checks: Check[] }> {
  const staged = await stagedOf(ctx, tx, ids)
  const checks: Check[] = []
  for (const id of ids) {
    if (staged.get(id)) throw conflict(`a token with id ${id} already exists`)
    if (!staged.has(id)) checks.push({ check: 'token.absent', tenant_id: ctx.principal.tenantId, id })
  }
  return { checks }
}
