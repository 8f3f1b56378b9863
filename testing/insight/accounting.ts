import type {
  AccessRule,
  AccessUse,
  ObservedCall,
  Observer,
  Permission,
  Transform,
} from '../../src/kernel/index.js'
import type { Principals } from './principals.js'

/** One line of the exposure table: how many times one caller had one token's plaintext in one operation. */
export interface ExposureRow {
  /** The application's name (a session: `session <id>`). */
  application: string
  /** The application's id, or the session's. */
  principal_id: string
  kind: 'application' | 'session'
  token_id: string
  /** The client operation: `token.get`, `token.detokenize`, `token.search`, `reactor.react`, … */
  operation: string
  count: number
}

/** Every time plaintext left the vault during the test so far, counted. */
export interface Exposure {
  /** Plaintexts that left the vault, in all. */
  total: number
  /** By application name (sessions as `session <id>`). */
  byApplication: Record<string, number>
  /** By token id. */
  byToken: Record<string, number>
  /** By operation. */
  byOperation: Record<string, number>
  /** Application × token × operation, in the order they first happened. */
  rows: ExposureRow[]
}

/** One access decision a caller's calls made, as recorded (the rule as it was held then). */
export interface UseRecord {
  permission: Permission
  operation: string
  transform?: Transform
  /** The deciding rule's index and the rule as held then; absent when permissions alone decided. */
  rule?: { index: number; rule: AccessRule }
  /** The containers of the token decided on. */
  containers?: readonly string[]
}

/** Everything one caller (application or session) was allowed to do in the test. */
export interface CallerUses {
  kind: 'application' | 'session'
  principalId: string
  tenantId: string
  uses: Map<string, UseRecord>
}

/**
 * The test kit's observer (see `Observer` in the core): counts each plaintext that leaves the
 * vault per caller, token and operation, and keeps each distinct access decision each caller made.
 * It is told by the core where it decides; it re-derives nothing.
 */
export class Accounting implements Observer {
  private readonly exposures = new Map<string, ExposureRow>()
  private readonly callers = new Map<string, CallerUses>()
  /** Above zero while the kit itself calls the vault (`leaks.canary`): those calls are not the test's. */
  quiet = 0

  constructor(private readonly principals: Principals) {}

  revealed(call: ObservedCall, tokenId: string): void {
    if (this.quiet > 0) return
    const key = `${call.principalId}\u0000${tokenId}\u0000${call.operation}`
    const row = this.exposures.get(key)
    if (row) {
      row.count++
      return
    }
    this.exposures.set(key, {
      application: this.principals.get(call.principalId)?.name ?? call.principalId,
      principal_id: call.principalId,
      kind: call.kind,
      token_id: tokenId,
      operation: call.operation,
      count: 1,
    })
  }

  used(call: ObservedCall, use: AccessUse): void {
    if (this.quiet > 0) return
    let caller = this.callers.get(call.principalId)
    if (!caller) {
      caller = { kind: call.kind, principalId: call.principalId, tenantId: call.tenantId, uses: new Map() }
      this.callers.set(call.principalId, caller)
    }
    const held = use.rule === undefined ? undefined : this.principals.get(call.principalId)?.rules[use.rule]
    const key = [
      use.permission,
      call.operation,
      use.transform ?? '',
      use.rule ?? '',
      use.containers?.join('\u0001') ?? '',
    ].join('\u0000')
    if (caller.uses.has(key)) return
    const record: UseRecord = { permission: use.permission, operation: call.operation }
    if (use.transform !== undefined) record.transform = use.transform
    if (use.rule !== undefined && held) record.rule = { index: use.rule, rule: held }
    if (use.containers !== undefined) record.containers = [...use.containers]
    caller.uses.set(key, record)
  }

  /** The exposure table so far. */
  exposure(): Exposure {
    const rows = [...this.exposures.values()].map((r) => ({ ...r }))
    const sum = (pick: (r: ExposureRow) => string) => {
      const out: Record<string, number> = {}
      for (const r of rows) out[pick(r)] = (out[pick(r)] ?? 0) + r.count
      return out
    }
    return {
      total: rows.reduce((n, r) => n + r.count, 0),
      byApplication: sum((r) => r.application),
      byToken: sum((r) => r.token_id),
      byOperation: sum((r) => r.operation),
      rows,
    }
  }

  /** The callers seen so far, in the order they first acted. */
  uses(): CallerUses[] {
    return [...this.callers.values()]
  }

  /** Forgets every count and decision (a fresh start for the next test). */
  clear(): void {
    this.exposures.clear()
    this.callers.clear()
  }
}
