import type {
  Association,
  FormulaUse,
  IdempotencyRecord,
  Reactor,
  StagedWrite,
  StoredApplication,
  StoredFormula,
  StoredSession,
  StoredToken,
  StoredTransaction,
  Tenant,
  TokenLock,
} from '../../src/kernel/index.js'
import { tokenHead } from '../../src/kernel/index.js'
import type { KeyOwner, SortedIds, TokenHead } from '../../src/store/index.js'
import { copy, Scoped, TokenIndex } from '../../src/store/index.js'
import { type ClientKeyMaps, emptyClientKeyMaps } from './client-keys.js'
import { type DocumentMaps, emptyDocumentMaps } from './documents.js'
import { emptyLogMaps, type LogMaps } from './logs.js'
import { emptyWebhookMaps, type WebhookMaps } from './outbox.js'
import { emptyProxyMaps, type ProxyMaps } from './proxies.js'
import { emptyTokenIntentMaps, type TokenIntentMaps } from './token-intents.js'

/** Whether a parent's child list must look at this child: absent, or with an expiry. */
export const needsCheck = (child: StoredToken | undefined) =>
  child === undefined || child.expires_at !== undefined

/** A link's place in its parent's order (`ChildKey.key`): its sequence number, zero-padded to sort as text. */
export const placeKey = (seq: number) => String(seq).padStart(16, '0')

/** A token's head: every field but `data` and `mask`, copied. */
export function headOf(token: StoredToken): TokenHead {
  return copy(tokenHead(token))
}

/** A sort key joining a tenant and an id (official formulas have no tenant). */
export const k = (tenantId: string | null, id: string) => `${tenantId ?? ''}\u0000${id}`

/**
 * The maps a memory state keeps its records and indexes in: plain data, one object per state. The
 * ops (`apply.ts`), the checks (`checks.ts`) and the reads (`reads.ts`) are functions over it.
 */
export interface MemoryMaps {
  readonly tenants: Map<string, Tenant>
  readonly applications: Scoped<StoredApplication>
  /** key hash → the application or session it belongs to. */
  readonly keys: Map<
    string,
    { kind: 'application' | 'session'; tenantId: string; id: string; owner?: KeyOwner }
  >
  readonly tokens: Scoped<StoredToken>
  /** Every token id in order, and the ids carrying each exact term: what `findTokenIds` reads. */
  readonly tokenIndex: TokenIndex
  /** parent → its links' places (`ChildKey.key`) in order, and place → child id: `findChildIds`. */
  readonly childOrder: Scoped<{ keys: SortedIds; ids: Map<string, string> }>
  /** The tokens that have an `expires_at`: what `listExpired` scans for tokens. */
  readonly expiringTokens: Scoped<StoredToken>
  /** The tokens that have a `cvc_expires_at`: what `listExpired` scans for `token.cvc`. */
  readonly cvcTokens: Scoped<StoredToken>
  /** parent → child id → association, in the order they were made. */
  readonly children: Scoped<Map<string, Association>>
  /** child → parent ids. */
  readonly parents: Scoped<Set<string>>
  /**
   * Each link's sequence number (by `linkKey`), to order id-filtered child lists without a scan:
   * a field of the state, dropped when the link is.
   */
  readonly linkOrder: Map<string, number>
  nextLink: number
  /**
   * parent → how many of its children are absent or have an `expires_at` (0: every child counts
   * without a scan).
   */
  readonly expiring: Scoped<number>
  readonly transactions: Scoped<StoredTransaction>
  /** transaction → its staged records, by token id (in id order for `listStaged`). */
  readonly staged: Scoped<{ ids: SortedIds; records: Map<string, StagedWrite> }>
  /** token → its lock record. */
  readonly locks: Scoped<TokenLock>
  readonly sessions: Scoped<StoredSession>
  /** nonce hash → session id. */
  readonly nonces: Scoped<string>
  /** Official formulas in the `null` scope. */
  readonly formulas: Scoped<StoredFormula>
  /** formula id → `tenant\u0000reactor` → its use record. */
  readonly formulaUses: Map<string, Map<string, FormulaUse>>
  readonly reactors: Scoped<Reactor>
  readonly idempotency: Scoped<IdempotencyRecord>
  /** tenant → how many of its sessions are in state `created` (`countRecords`). */
  readonly createdSessions: Map<string, number>
  /** tenant → the characters its open transactions staged (`countRecords` of `transaction.staged`). */
  readonly stagedChars: Map<string, number>
  /** Webhooks and outbox entries, with their indexes. */
  readonly hooks: WebhookMaps
  /** Pre-configured proxies. */
  readonly proxies: ProxyMaps
  /** Client encryption keys. */
  readonly clientKeys: ClientKeyMaps
  /** Token intents. */
  readonly intents: TokenIntentMaps
  /** Documents: heads and chunks. */
  readonly documents: DocumentMaps
  /** Audit log entries, with their indexes. */
  readonly logs: LogMaps
}

/** A state's maps, all empty. */
export function emptyMaps(): MemoryMaps {
  return {
    tenants: new Map(),
    applications: new Scoped(),
    keys: new Map(),
    tokens: new Scoped(),
    tokenIndex: new TokenIndex(),
    childOrder: new Scoped(),
    expiringTokens: new Scoped(),
    cvcTokens: new Scoped(),
    children: new Scoped(),
    parents: new Scoped(),
    linkOrder: new Map(),
    nextLink: 0,
    expiring: new Scoped(),
    transactions: new Scoped(),
    staged: new Scoped(),
    locks: new Scoped(),
    sessions: new Scoped(),
    nonces: new Scoped(),
    formulas: new Scoped(),
    formulaUses: new Map(),
    reactors: new Scoped(),
    idempotency: new Scoped(),
    createdSessions: new Map(),
    stagedChars: new Map(),
    hooks: emptyWebhookMaps(),
    proxies: emptyProxyMaps(),
    clientKeys: emptyClientKeyMaps(),
    intents: emptyTokenIntentMaps(),
    documents: emptyDocumentMaps(),
    logs: emptyLogMaps(),
  }
}

/** The key of the link `parentId` → `childId` of a tenant in `linkOrder` (ids may hold any character). */
export function linkKey(tenantId: string, parentId: string, childId: string): string {
  return JSON.stringify([tenantId, parentId, childId])
}
