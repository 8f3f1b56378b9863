import type {
  Association,
  FormulaUse,
  IdempotencyRecord,
  LogEntry,
  OutboxEntry,
  Reactor,
  StagedWrite,
  StoredApplication,
  StoredClientKey,
  StoredDocument,
  StoredDocumentChunk,
  StoredFormula,
  StoredProxy,
  StoredSession,
  StoredToken,
  StoredTokenIntent,
  StoredTransaction,
  StoredWebhook,
  Tenant,
  TokenLock,
} from '../../src/kernel/index.js'
import type { Check, Op, WriteResult } from '../../src/store/index.js'
import { applyOp } from './apply.js'
import { failedCheck } from './checks.js'
import { allChunks } from './documents.js'
import { allEntries } from './logs.js'
import { emptyMaps, type MemoryMaps } from './maps.js'
import { writeBatch } from './ops.js'
import * as outbox from './outbox.js'
import * as read from './reads.js'

/** A lock record as `StateRecords` lists it. */
export type LockTuple = readonly [
  tenantId: string,
  tokenId: string,
  transactionId: string,
  expiresAt?: string,
]

/** The arguments of a read of `reads.ts` after the maps. */
type Args<F> = F extends (m: MemoryMaps, ...args: infer A) => unknown ? A : never

/**
 * Every record a `MemoryState` holds, as `records()` hands them out and `fromRecords` takes them:
 * what a serialiser needs to rebuild a state that answers every read and check as the original.
 * Beside the `StoreDump` kinds, `locks` holds the lock records, which the transactions alone do not
 * tell (a lock may have passed to another transaction, or been released by one while another that
 * lists it is still open).
 */
export interface StateRecords {
  tenants: readonly Tenant[]
  applications: readonly StoredApplication[]
  tokens: readonly StoredToken[]
  /** Each parent's links in the order they were made (the order `listChildren` answers in). */
  associations: readonly Association[]
  transactions: readonly StoredTransaction[]
  /** Staged records (what open transactions staged), transaction by transaction in token id order. */
  staged: readonly StagedWrite[]
  /**
   * `[tenant id, token id, id of the transaction holding its lock, expires_at]`, one per lock
   * record; `expires_at` is left out when it is that of the holding transaction (as the core writes
   * it, and as every lock of states saved before lock records existed was).
   */
  locks: readonly LockTuple[]
  sessions: readonly StoredSession[]
  formulas: readonly StoredFormula[]
  reactors: readonly Reactor[]
  /** Idempotency records (records written before they existed lack the list: read as empty). */
  idempotency: readonly IdempotencyRecord[]
  /**
   * Formula-use records. States saved before they existed lack the list: then every reactor that
   * names a formula uses it, as the stores of then counted.
   */
  formulaUses: readonly FormulaUse[]
  /** Webhooks (states saved before they existed lack the list: read as empty). */
  webhooks: readonly StoredWebhook[]
  /** Pre-configured proxies (states saved before they existed lack the list: read as empty). */
  proxies?: readonly StoredProxy[]
  /** Client encryption keys (states saved before they existed lack the list: read as empty). */
  client_keys?: readonly StoredClientKey[]
  /** Token intents (states saved before they existed lack the list: read as empty). */
  token_intents?: readonly StoredTokenIntent[]
  /** Documents' heads (states saved before they existed lack the list: read as empty). */
  documents?: readonly StoredDocument[]
  /** Documents' chunks, sealed (states saved before they existed lack the list: read as empty). */
  document_chunks?: readonly StoredDocumentChunk[]
  /** Outbox entries (states saved before they existed lack the list: read as empty). */
  outbox: readonly OutboxEntry[]
  /** Audit log entries (states saved before they existed lack the list: read as empty). */
  logs?: readonly LogEntry[]
}

/**
 * The whole store as in-memory maps (`maps`, plain data) with the functions over them: a batch's
 * checks and ops run without yielding, so in one process every batch is atomic and they are
 * serialized. The memory store is the same maps and functions behind async methods
 * (`memoryStore()`); the file store replays its journal into a state; the test kit publishes it as
 * `ReferenceModel`. Each method hands its call to the function of the same name by name.
 */
export class MemoryState {
  /** The state's records and indexes, which the functions of `apply.ts`, `checks.ts`, `reads.ts` work on. */
  readonly maps: MemoryMaps

  constructor(maps: MemoryMaps = emptyMaps()) {
    this.maps = maps
  }

  /** Applies a batch atomically if its checks hold. Synchronous: nothing interleaves. */
  write(batch: { checks?: readonly Check[]; ops: readonly Op[] }): WriteResult {
    return writeBatch(this.maps, batch)
  }

  /** Applies one op. Ops are total: applying one never fails. */
  apply(op: Op): void {
    applyOp(this.maps, op)
  }

  /** The first check that fails, or null when all hold. */
  failedCheck(checks: readonly Check[]): Check | null {
    return failedCheck(this.maps, checks)
  }

  hasTenants(...a: Args<typeof read.hasTenants>) {
    return read.hasTenants(this.maps, ...a)
  }
  listTenants(...a: Args<typeof read.listTenants>) {
    return read.listTenants(this.maps, ...a)
  }
  getTenant(...a: Args<typeof read.getTenant>) {
    return read.getTenant(this.maps, ...a)
  }
  findKey(...a: Args<typeof read.findKey>) {
    return read.findKey(this.maps, ...a)
  }
  getApplication(...a: Args<typeof read.getApplication>) {
    return read.getApplication(this.maps, ...a)
  }
  listApplications(...a: Args<typeof read.listApplications>) {
    return read.listApplications(this.maps, ...a)
  }
  hasCvcDeadline(...a: Args<typeof read.hasCvcDeadline>) {
    return read.hasCvcDeadline(this.maps, ...a)
  }
  getToken(...a: Args<typeof read.getToken>) {
    return read.getToken(this.maps, ...a)
  }
  hasAssociation(...a: Args<typeof read.hasAssociation>) {
    return read.hasAssociation(this.maps, ...a)
  }
  listLinks(...a: Args<typeof read.listLinks>) {
    return read.listLinks(this.maps, ...a)
  }
  listTokens(...a: Args<typeof read.listTokens>) {
    return read.listTokens(this.maps, ...a)
  }
  findTokenIds(...a: Args<typeof read.findTokenIds>) {
    return read.findTokenIds(this.maps, ...a)
  }
  findChildIds(...a: Args<typeof read.findChildIds>) {
    return read.findChildIds(this.maps, ...a)
  }
  getTokenHeads(...a: Args<typeof read.getTokenHeads>) {
    return read.getTokenHeads(this.maps, ...a)
  }
  getTokens(...a: Args<typeof read.getTokens>) {
    return read.getTokens(this.maps, ...a)
  }
  listChildren(...a: Args<typeof read.listChildren>) {
    return read.listChildren(this.maps, ...a)
  }
  getTransaction(...a: Args<typeof read.getTransaction>) {
    return read.getTransaction(this.maps, ...a)
  }
  listTransactions(...a: Args<typeof read.listTransactions>) {
    return read.listTransactions(this.maps, ...a)
  }
  getStaged(...a: Args<typeof read.getStaged>) {
    return read.getStaged(this.maps, ...a)
  }
  listStaged(...a: Args<typeof read.listStaged>) {
    return read.listStaged(this.maps, ...a)
  }
  getSessionByNonce(...a: Args<typeof read.getSessionByNonce>) {
    return read.getSessionByNonce(this.maps, ...a)
  }
  getFormula(...a: Args<typeof read.getFormula>) {
    return read.getFormula(this.maps, ...a)
  }
  listFormulas(...a: Args<typeof read.listFormulas>) {
    return read.listFormulas(this.maps, ...a)
  }
  getReactor(...a: Args<typeof read.getReactor>) {
    return read.getReactor(this.maps, ...a)
  }
  listReactors(...a: Args<typeof read.listReactors>) {
    return read.listReactors(this.maps, ...a)
  }
  getProxy(...a: Args<typeof read.getProxy>) {
    return read.getProxy(this.maps, ...a)
  }
  listProxies(...a: Args<typeof read.listProxies>) {
    return read.listProxies(this.maps, ...a)
  }
  getClientKey(...a: Args<typeof read.getClientKey>) {
    return read.getClientKey(this.maps, ...a)
  }
  listClientKeys(...a: Args<typeof read.listClientKeys>) {
    return read.listClientKeys(this.maps, ...a)
  }
  getTokenIntent(...a: Args<typeof read.getTokenIntent>) {
    return read.getTokenIntent(this.maps, ...a)
  }
  listTokenIntents(...a: Args<typeof read.listTokenIntents>) {
    return read.listTokenIntents(this.maps, ...a)
  }
  listDocuments(...a: Args<typeof read.listDocuments>) {
    return read.listDocuments(this.maps, ...a)
  }
  getDocument(...a: Args<typeof read.getDocument>) {
    return read.getDocument(this.maps, ...a)
  }
  getDocumentChunk(...a: Args<typeof read.getDocumentChunk>) {
    return read.getDocumentChunk(this.maps, ...a)
  }
  getWebhook(...a: Args<typeof read.getWebhook>) {
    return read.getWebhook(this.maps, ...a)
  }
  listWebhooks(...a: Args<typeof read.listWebhooks>) {
    return read.listWebhooks(this.maps, ...a)
  }
  getOutbox(...a: Args<typeof read.getOutbox>) {
    return read.getOutbox(this.maps, ...a)
  }
  listOutbox(...a: Args<typeof read.listOutbox>) {
    return read.listOutbox(this.maps, ...a)
  }
  listDueOutbox(...a: Args<typeof read.listDueOutbox>) {
    return read.listDueOutbox(this.maps, ...a)
  }
  listLogs(...a: Args<typeof read.listLogs>) {
    return read.listLogs(this.maps, ...a)
  }
  unindexedLog(...a: Args<typeof read.unindexedLog>) {
    return read.unindexedLog(this.maps, ...a)
  }
  getIdempotency(...a: Args<typeof read.getIdempotency>) {
    return read.getIdempotency(this.maps, ...a)
  }
  listIdempotency(...a: Args<typeof read.listIdempotency>) {
    return read.listIdempotency(this.maps, ...a)
  }
  countRecords(...a: Args<typeof read.countRecords>) {
    return read.countRecords(this.maps, ...a)
  }
  listExpired(...a: Args<typeof read.listExpired>) {
    return read.listExpired(this.maps, ...a)
  }
  dump(...a: Args<typeof read.dump>) {
    return read.dump(this.maps, ...a)
  }

  /**
   * Rebuilds the state that `records()` described: every read and check answers as it did on the
   * original, and ops go on to apply alike. Tokens are put before the associations between them,
   * and the lock records are put exactly as listed (whatever the open transactions list).
   *
   * The new state takes the records as its own and may mutate them later (see `records()`): pass
   * records nothing else holds, such as freshly parsed ones. Key and nonce hashes are taken to be
   * unique, as the SHA-256 hashes of random secrets that they are.
   */
  static fromRecords(r: StateRecords): MemoryState {
    const state = new MemoryState()
    for (const tenant of r.tenants) state.apply({ op: 'tenant.put', tenant })
    for (const application of r.applications) state.apply({ op: 'application.put', application })
    for (const token of r.tokens) state.apply({ op: 'token.put', token })
    for (const association of r.associations) state.apply({ op: 'association.put', association })
    for (const transaction of r.transactions) state.apply({ op: 'transaction.put', transaction })
    for (const staged of r.staged) state.apply({ op: 'staged.put', staged })
    for (const lock of r.locks) loadLock(state.maps, lock)
    for (const session of r.sessions) state.apply({ op: 'session.put', session })
    for (const formula of r.formulas) state.apply({ op: 'formula.put', formula })
    for (const reactor of r.reactors) state.apply({ op: 'reactor.put', reactor })
    for (const record of r.idempotency ?? []) state.apply({ op: 'idempotency.put', record })
    for (const use of r.formulaUses) state.apply({ op: 'formula_use.put', use })
    for (const webhook of r.webhooks ?? []) state.apply({ op: 'webhook.put', webhook })
    for (const proxy of r.proxies ?? []) state.apply({ op: 'proxy.put', proxy })
    for (const key of r.client_keys ?? []) state.apply({ op: 'client_key.put', key })
    for (const intent of r.token_intents ?? []) state.apply({ op: 'token_intent.put', intent })
    for (const document of r.documents ?? []) state.apply({ op: 'document.put', document })
    for (const chunk of r.document_chunks ?? []) state.apply({ op: 'document_chunk.put', chunk })
    for (const entry of r.outbox ?? []) state.apply({ op: 'outbox.put', entry })
    for (const entry of r.logs ?? []) state.apply({ op: 'log.put', entry })
    return state
  }

  /**
   * Every record as stored, neither copied nor sorted: for a serialiser that reads them at once
   * (say, one `JSON.stringify`), before anything else runs. The arrays are fresh, but the records
   * in them are the state's own: never mutate them, and never keep them.
   *
   * Associations come parent by parent, each parent's in the order its links were made (a link
   * made again after an unlink comes last); that per-parent order is what `listChildren` answers
   * in, and the only order among links that any read shows.
   */
  records(): StateRecords {
    const associations: Association[] = []
    for (const kids of this.maps.children.values()) for (const a of kids.values()) associations.push(a)
    const locks: LockTuple[] = []
    for (const lock of this.maps.locks.values()) locks.push(lockTuple(this.maps, lock))
    return {
      tenants: [...this.maps.tenants.values()],
      applications: [...this.maps.applications.values()],
      tokens: [...this.maps.tokens.values()],
      associations,
      transactions: [...this.maps.transactions.values()],
      staged: [...this.maps.staged.values()].flatMap((held) =>
        held.ids.after(undefined, held.ids.size).map((id) => held.records.get(id)!),
      ),
      locks,
      sessions: [...this.maps.sessions.values()],
      formulas: [...this.maps.formulas.values()],
      reactors: [...this.maps.reactors.values()],
      idempotency: [...this.maps.idempotency.values()],
      formulaUses: [...this.maps.formulaUses.values()].flatMap((uses) => [...uses.values()]),
      webhooks: [...this.maps.hooks.webhooks.values()],
      proxies: [...this.maps.proxies.proxies.values()],
      client_keys: [...this.maps.clientKeys.keys.values()],
      token_intents: [...this.maps.intents.intents.values()],
      documents: [...this.maps.documents.heads.values()],
      document_chunks: allChunks(this.maps.documents),
      outbox: [...outbox.allEntries(this.maps.hooks)],
      logs: [...allEntries(this.maps.logs)],
    }
  }
}

/** A lock record as `StateRecords` lists it: `expires_at` left out when it is the holder's. */
function lockTuple(m: MemoryMaps, lock: TokenLock): LockTuple {
  const holder = m.transactions.get(lock.tenant_id, lock.transaction_id)
  return holder?.expires_at === lock.expires_at
    ? [lock.tenant_id, lock.token_id, lock.transaction_id]
    : [lock.tenant_id, lock.token_id, lock.transaction_id, lock.expires_at]
}

/**
 * Puts the lock record a `StateRecords` tuple lists (after the transactions: one without
 * `expires_at` takes its holder's; without a holder to take it from, it locks nothing and is
 * dropped).
 */
function loadLock(m: MemoryMaps, [tenantId, tokenId, transactionId, expiresAt]: LockTuple) {
  const expires = expiresAt ?? m.transactions.get(tenantId, transactionId)?.expires_at
  if (expires === undefined) return
  applyOp(m, {
    op: 'lock.put',
    lock: { tenant_id: tenantId, token_id: tokenId, transaction_id: transactionId, expires_at: expires },
  })
}
