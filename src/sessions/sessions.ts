import { requireGrantWithin, requireType } from '../applications/index.js'
import type { Ctx } from '../call/index.js'
import { checkFailure } from '../call/index.js'
import type { EmptyInput, StoredSession } from '../kernel/index.js'
import {
  conflict,
  emptyBody,
  invalid,
  isoAfter,
  newApiKey,
  newId,
  newNonce,
  notFound,
  parse,
  sha256,
  tooMany,
} from '../kernel/index.js'
import { sweepExpiredOf } from '../lifecycle/index.js'
import type { AuthorizeSessionInput } from './inputs.js'
import { authorizeSessionInput } from './schemas.js'

/** The default `maxUnauthorizedSessionsPerTenant` of `createService`. */
export const DEFAULT_UNAUTHORIZED_SESSIONS_PER_TENANT = 1000

/** The answer of session create: the key and nonce in plaintext, shown only here. */
export interface CreatedSession {
  session_key: string
  nonce: string
  expires_at: string
}

/** The earlier of two ISO times, `at` when `bound` is absent. */
const earlier = (at: string, bound: string | undefined) => (bound !== undefined && bound < at ? bound : at)

/** Session create (public key) and authorize (private key of the same tenant). */
export function sessionOperations(ctx: Ctx) {
  return {
    /** Creates a session with no access, expiring after `sessionTtlMs` (default 3 minutes). */
    async create(input?: EmptyInput): Promise<CreatedSession> {
      requireType(ctx.principal, ['public'], 'creating a session')
      parse(emptyBody, input)
      const tenantId = ctx.principal.tenantId
      const bound = ctx.options.maxUnauthorizedSessionsPerTenant
      const held = () => ctx.store.countRecords(tenantId, 'session.created')
      // At the bound, expired sessions are swept first (the host may never sweep), then counted again.
      if (
        (await held()) >= bound &&
        ((await sweepExpiredOf(ctx.store, 'session', ctx.now())) === 0 || (await held()) >= bound)
      ) {
        // A place frees when one is authorized, or once one expires.
        throw tooMany(
          `this tenant has ${bound} sessions not yet authorized, the most it may; each lives until authorized or expired`,
          Math.max(1, Math.ceil(ctx.options.sessionTtlMs / 1000)),
        )
      }
      const now = new Date(ctx.now())
      const sessionKey = newApiKey()
      const nonce = newNonce()
      const session: StoredSession = {
        id: newId(),
        tenant_id: ctx.principal.tenantId,
        application_id: ctx.principal.id,
        key_hash: sha256(sessionKey),
        nonce_hash: sha256(nonce),
        state: 'created',
        permissions: [],
        created_at: now.toISOString(),
        expires_at: isoAfter(now, ctx.options.sessionTtlMs),
      }
      await ctx.store.write({ ops: [{ op: 'session.put', session }] })
      return { session_key: sessionKey, nonce, expires_at: session.expires_at }
    },

    /**
     * Grants a session `permissions` and/or `rules`, no more than the caller holds, consuming its
     * single-use nonce: of any number of concurrent calls with one nonce exactly one succeeds.
     */
    async authorize(input: AuthorizeSessionInput): Promise<void> {
      requireType(ctx.principal, ['private'], 'authorizing a session')
      const body = parse(authorizeSessionInput, input)
      const now = ctx.now()
      if (body.expires_at !== undefined && body.expires_at <= now)
        throw invalid('expires_at', 'must be in the future')
      const session = await ctx.store.getSessionByNonce(ctx.principal.tenantId, sha256(body.nonce))
      if (!session || session.expires_at <= now) throw notFound('session')
      if (session.state !== 'created') throw conflict('the nonce has already been used')
      requireGrantWithin(ctx.principal, { permissions: body.permissions, rules: body.rules })
      const authorized: StoredSession = {
        ...session,
        state: 'authorized',
        permissions: body.permissions,
        ...(body.rules.length ? { rules: body.rules } : {}),
        // No later than the authorizing key's own end (the session stops with it in any case).
        expires_at: earlier(body.expires_at ?? session.expires_at, ctx.principal.expiresAt),
        authorized_by: ctx.principal.id,
        ...(ctx.principal.keyHash === undefined ? {} : { authorized_by_key_hash: ctx.principal.keyHash }),
        authorized_at: now,
      }
      const result = await ctx.store.write({
        // Read above as created and unexpired; of concurrent authorizations only the first finds it
        // unchanged.
        checks: [{ check: 'session.unchanged', tenant_id: session.tenant_id, id: session.id, session }],
        ops: [{ op: 'session.put', session: authorized }],
      })
      if (!result.ok) throw checkFailure(result.failed)
    },
  }
}
