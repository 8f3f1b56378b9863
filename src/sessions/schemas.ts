import * as v from 'valibot'
import { permissionList, sessionRuleList } from '../applications/index.js'
import { isoDateTime } from '../kernel/index.js'

/** Body of session authorize: at least one of `permissions` and `rules` must be non-empty. */
export const authorizeSessionInput = v.pipe(
  v.strictObject({
    nonce: v.pipe(
      v.string('must be a string'),
      v.minLength(1, 'is required'),
      v.maxLength(200, 'must be at most 200 characters'),
    ),
    permissions: v.optional(permissionList, []),
    rules: v.optional(sessionRuleList, []),
    expires_at: v.optional(isoDateTime),
  }),
  v.forward(
    v.check((b) => b.permissions.length > 0 || b.rules.length > 0, 'permissions or rules must be non-empty'),
    ['permissions'],
  ),
)
