import { type Principal, requireReveal, tokenAccess } from '../applications/index.js'
import type { Json, StoredToken } from '../kernel/index.js'
import { forbidden, ServiceError } from '../kernel/index.js'
import { typeRules } from './token-types.js'

/**
 * The rule every token write keeps: no write may let anyone see more of a token than they could
 * before it. What decides what readers see of a token — its `mask`, `containers`,
 * `fingerprint_expression` and `search_indexes` — changes only by a caller that may read the token
 * revealed (on its old containers and its new ones); and a caller that can't may change `data`
 * only where no expression of the token can mix what it writes with what is stored.
 */

/** The fields of a token that decide what its readers see, as a write would leave them. */
export interface VisibilityFields {
  mask: Json | undefined
  containers: readonly string[]
  fingerprint_expression: string | undefined
  search_indexes: readonly string[] | undefined
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)

const isObject = (value: Json | undefined): value is { [key: string]: Json } =>
  value !== null && typeof value === 'object' && !Array.isArray(value)

/**
 * Throws `forbidden` (before anything is evaluated or written) unless `principal` may make a write
 * that leaves `current` with the fields `next` and, when `data` is given, merges it onto the
 * stored data:
 * - a changed `mask`, `fingerprint_expression` or `search_indexes` needs `token:read` with the
 *   `reveal` transform on the token;
 * - changed `containers` need it on the old containers and on the new ones (moving a token to
 *   where its caller reads it revealed would reveal it);
 * - a merge patch of `data` that keeps stored data beside the caller's needs it too when the token
 *   has an expression that could combine them (a mask other than its type's, a fingerprint
 *   expression, search indexes): `{{ data.a | default: data.b }}` shows `b` once `a` is removed;
 * - so does a change of `metadata` when the fingerprint expression reads it
 *   (`{{ data.number | slice: metadata.at, 1 }}` would fingerprint one digit at a time).
 * Unchanged values (the same JSON) need nothing.
 */
export function requireVisibilityKept(
  principal: Principal,
  current: StoredToken,
  next: VisibilityFields,
  patch: { data?: Json | undefined; metadata?: unknown },
): void {
  const { data } = patch
  const changed: string[] = []
  if (!same(next.mask, current.mask)) changed.push('mask')
  if (!same(next.fingerprint_expression, current.fingerprint_expression))
    changed.push('fingerprint_expression')
  if (!same(next.search_indexes ?? [], current.search_indexes ?? [])) changed.push('search_indexes')
  const moved = !same(next.containers, current.containers)
  if (moved) changed.push('containers')
  if (changed.length) {
    const what = `changing ${changed.join(', ')}`
    requireReveal(principal, current, what)
    if (moved) requireReveal(principal, { id: current.id, containers: [...next.containers] }, what)
  }
  if (data !== undefined && isObject(data) && isObject(current.data)) {
    const mixes =
      !same(next.mask, typeRules(current.type).mask) ||
      next.fingerprint_expression !== undefined ||
      (next.search_indexes?.length ?? 0) > 0
    if (mixes && tokenAccess(principal, 'token:read', current) !== 'reveal') {
      throw forbidden(
        `merging data into token ${current.id}, whose mask, fingerprint expression or search indexes ` +
          'could combine it with the stored data, needs token:read access with the reveal transform ' +
          '(data that is not an object replaces the stored data whole, and needs none)',
      )
    }
  }
  if (
    patch.metadata !== undefined &&
    next.fingerprint_expression?.includes('metadata') &&
    tokenAccess(principal, 'token:read', current) !== 'reveal'
  ) {
    throw forbidden(
      `changing the metadata of token ${current.id}, whose fingerprint expression reads it, needs ` +
        'token:read access with the reveal transform',
    )
  }
}

/** What an expression's failure over stored data says instead of its reason (which could quote the data). */
export const FAILS_ON_STORED_DATA = "can't be evaluated on the token's data"

/** A message that names a limit and quotes nothing, kept as it is (a budget's answer). */
const NAMES_A_LIMIT = /\b(too large|too deep|too deeply|limit|at most|longer than|more than|budget)\b/i
/** What a quoted value brings into a message: quotes, brackets, braces. */
const QUOTES = /["'`[\]{}]/

/**
 * A `validation_failed` raised while evaluating expressions over a token's stored data, with
 * every message that could quote the data replaced by `FAILS_ON_STORED_DATA`: the fields named
 * stay, and so do messages that only name a limit. Other errors are returned as they are.
 */
export function withoutStoredValues(error: unknown): unknown {
  if (!(error instanceof ServiceError) || error.code !== 'validation_failed') return error
  const safe = (m: string) => (NAMES_A_LIMIT.test(m) && !QUOTES.test(m) ? m : FAILS_ON_STORED_DATA)
  const issues: Record<string, string[]> = {}
  for (const [field, messages] of Object.entries(error.issues ?? {})) {
    Object.defineProperty(issues, field, {
      value: messages.map(safe),
      enumerable: true,
      writable: true,
      configurable: true,
    })
  }
  const fields = Object.keys(issues)
  const message = fields.length
    ? fields.map((f) => `${f}: ${issues[f]!.join('; ')}`).join('; ')
    : FAILS_ON_STORED_DATA
  return new ServiceError('validation_failed', message, { issues })
}

/** Runs `f`, which evaluates expressions over stored data; a failure says nothing of the data (`withoutStoredValues`). */
export function overStoredData<T>(f: () => T): T {
  try {
    return f()
  } catch (error) {
    throw withoutStoredValues(error)
  }
}

/** `overStoredData` for asynchronous work (fingerprinting). */
export async function overStoredDataAsync<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f()
  } catch (error) {
    throw withoutStoredValues(error)
  }
}
