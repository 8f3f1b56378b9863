import type { Permission, Transform } from './types.js'

/** Why a rule did or did not decide a token access (see `AccessTrace.rules`). */
export type RuleVerdict =
  /** It grants the permission, covers the token and has the lowest priority number: it decided. */
  | 'decided'
  /** It does not list the permission asked. */
  | 'lacks_permission'
  /** It lists the permission, but its container or conditions do not cover the token. */
  | 'does_not_cover'
  /** It grants the permission and covers the token, but a rule with a lower number (or equal, listed first) decided. */
  | 'outranked'

/** One rule as the evaluator weighed it: plain data (ids, names, containers), never token data. */
export interface RuleConsidered {
  /** Its index in the caller's `rules`. */
  index: number
  description: string
  priority: number
  /** Its container prefix, when it has one (else it has conditions). */
  container?: string
  transform: Transform
  verdict: RuleVerdict
}

/**
 * The explanation of one access decision, made by the evaluator itself (src/applications/access.ts)
 * while it decides: the permission asked, the token's id and containers, each rule of the caller in
 * priority order with why it did or did not decide, and the decision (`null`: refused).
 */
export interface AccessTrace {
  permission: Permission
  /** The token the decision was about; absent for a permission outside token rules (reactors, applications). */
  token_id?: string
  containers?: readonly string[]
  principal: { kind: 'application' | 'session'; id: string }
  /** `rules`: the caller's rules alone decided; `permissions`: it has no rules, its permissions did. */
  by: 'rules' | 'permissions'
  /** The caller's rules, lowest priority number first (ties in the order they are listed). */
  rules: RuleConsidered[]
  /** The transform granted, or null when access was refused. */
  decision: Transform | null
  /** The index of the rule that decided, when one did. */
  rule?: number
  /** One sentence saying why, for a person reading a failing test. */
  reason: string
}

/**
 * One access decision as the evaluator made it, not yet explained: the permission asked and the
 * transform granted (null: refused) are fields; `trace()` builds its `AccessTrace` when someone
 * reads it, by the evaluator's own loop over the same rules and token. A decision holds only
 * references it was given (the caller's rules, the token's id and containers), never token data.
 */
export interface AccessDecision {
  readonly permission: Permission
  readonly decision: Transform | null
  trace(): AccessTrace
}

/**
 * Where one call's explanations go (test mode, or a connection given `ConnectOptions.recorder`):
 * each access decision (its trace built only when asked), and each journal entry the call made.
 * Synchronous, never blocks.
 */
export interface CallRecorder {
  decided(decision: AccessDecision): void
  journaled(entry: {
    seq: number
    tenant_id: string | null
    actor_id: string | null
    operation: string
  }): void
}
