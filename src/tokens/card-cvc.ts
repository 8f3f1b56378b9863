import type { Json, StoredToken } from '../kernel/index.js'
import { isoAfter, withTokenFields } from '../kernel/index.js'

/**
 * How long a `card` token keeps the `cvc` it was given: one hour (PCI DSS forbids keeping card
 * verification codes; Basis Theory deletes them an hour after they are given).
 */
export const CVC_RETENTION_MS = 60 * 60 * 1000

type JsonObject = { [key: string]: Json }

const isObject = (value: Json | undefined): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** Whether `data` (a card's) holds a `cvc`. */
const hasCvc = (data: Json | undefined): boolean => isObject(data) && Object.hasOwn(data, 'cvc')

/**
 * `token` as written at `now`, with its `cvc_expires_at` (kept in the clear: a time, nothing
 * sensitive) set for a `card` holding a `cvc`: one hour after `now` when this write gives a cvc
 * (`givesCvc`: a create, or an update whose data patch names one), otherwise the deadline the token
 * had; none when the card holds no cvc.
 */
export function withCvcDeadline(token: StoredToken, now: string, givesCvc: boolean): StoredToken {
  const previous = token.cvc_expires_at
  if (token.type !== 'card' || !hasCvc(token.data)) {
    return previous === undefined ? token : withTokenFields(token, { cvc_expires_at: undefined })
  }
  const deadline = givesCvc || previous === undefined ? isoAfter(now, CVC_RETENTION_MS) : previous
  return withTokenFields(token, { cvc_expires_at: deadline })
}

/** Whether the data patch of an update gives a new `cvc` (not `null`, which removes it). */
export function patchGivesCvc(patch: Json | undefined): boolean {
  return isObject(patch) && Object.hasOwn(patch, 'cvc') && patch.cvc !== null
}

/**
 * The one rule every read of a stored token goes through: at and after its `cvc_expires_at`, a
 * token reads without `data.cvc` (and without the deadline), whatever the store still holds until
 * the sweep rewrites it (see `sweepExpired`). Answers `token` itself when nothing is due.
 */
export function withoutExpiredCvc(token: StoredToken, now: string): StoredToken {
  const deadline = token.cvc_expires_at
  if (deadline === undefined || deadline > now) return token
  const { cvc_expires_at: _due, ...rest } = token
  if (!isObject(token.data)) return rest
  const { cvc: _cvc, ...data } = token.data
  return { ...rest, data }
}
