import type { Permission, Transform } from './types.js'

/** One call as the observation port names it: its tenant, who made it, and the operation. */
export interface ObservedCall {
  tenantId: string
  /** The application's id, or the session's id for a session key. */
  principalId: string
  kind: 'application' | 'session'
  /** The client operation (`token.get`, `reactor.react`, `proxy.invoke`). */
  operation: string
}

/** A decision that let a call act: plain data (ids, names), never token data. */
export interface AccessUse {
  permission: Permission
  /** The token the decision was about; absent for a permission outside token rules. */
  tokenId?: string
  /** That token's containers. */
  containers?: readonly string[]
  /** The index, in the caller's rules, of the rule that decided; absent when permissions alone did. */
  rule?: number
  /** The transform the decision granted, for a token. */
  transform?: Transform
}

/**
 * The service's observation port (`ServiceOptions.observe`): the core tells it, where it decides,
 * what each call was allowed to do and which tokens' plaintext left the vault in its answer (a
 * revealed read or list, detokenize, a search answer, a react's arguments, a proxy expression).
 * Plain data only, never a plaintext. The test kit's exposure and used-access accounting plug in
 * here; without an observer nothing is computed. Calls are synchronous: an observer never blocks.
 */
export interface Observer {
  /** A permission check passed (for a token: under `use.transform`, decided by `use.rule`). */
  used(call: ObservedCall, use: AccessUse): void
  /** The plaintext of token `tokenId` left the vault in this call's answer or arguments. */
  revealed(call: ObservedCall, tokenId: string): void
}

/** The port and the call a principal's decisions are told to (see `Principal.observed`). */
export interface Observed {
  port: Observer
  call: ObservedCall
  /** false: the port is told only what was revealed (the audit log's alone), so uses are not built. */
  uses?: false
}

/** Tells the principal's observer, if any, that `use` was granted. */
export function noteUse(observed: Observed | undefined, use: AccessUse): void {
  if (observed && observed.uses !== false) observed.port.used(observed.call, use)
}

/** Tells the principal's observer, if any, that token `tokenId`'s plaintext left the vault. */
export function noteRevealed(observed: Observed | undefined, tokenId: string): void {
  observed?.port.revealed(observed.call, tokenId)
}
