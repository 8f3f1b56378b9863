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
} from '../../src/kernel/index.js'
import { type LockTuple, MemoryReads } from './reads.js'

export type { LockTuple } from './reads.js'

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
 * The whole store as in-memory maps, applying `Store.write` batches synchronously: a batch's checks
 * and ops run without yielding, so in one process every batch is atomic and they are serialized.
 * The memory store is this state behind async methods; the file store replays its journal into it.
 */
export class MemoryState extends MemoryReads {
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
    for (const lock of r.locks) state.loadLock(lock)
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
    for (const kids of this.children.values()) for (const a of kids.values()) associations.push(a)
    const locks: LockTuple[] = []
    for (const lock of this.locks.values()) locks.push(this.lockTuple(lock))
    return {
      tenants: [...this.tenants.values()],
      applications: [...this.applications.values()],
      tokens: [...this.tokens.values()],
      associations,
      transactions: [...this.transactions.values()],
      staged: [...this.staged.values()].flatMap((held) =>
        held.ids.after(undefined, held.ids.size).map((id) => held.records.get(id)!),
      ),
      locks,
      sessions: [...this.sessions.values()],
      formulas: [...this.formulas.values()],
      reactors: [...this.reactors.values()],
      idempotency: [...this.idempotency.values()],
      formulaUses: [...this.formulaUses.values()].flatMap((uses) => [...uses.values()]),
      webhooks: [...this.hooks.webhooks.values()],
      proxies: [...this.proxies.proxies.values()],
      client_keys: [...this.clientKeys.keys.values()],
      token_intents: [...this.intents.intents.values()],
      documents: [...this.documents.heads.values()],
      document_chunks: this.documents.allChunks(),
      outbox: [...this.hooks.entries.values()],
      logs: [...this.logs.entries.values()],
    }
  }
}
