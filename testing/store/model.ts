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
import { assertNever } from '../../src/kernel/index.js'
import type {
  Check,
  ChildKey,
  CountedKind,
  DueKey,
  ExpiringKind,
  KeyOwner,
  LogQuery,
  Op,
  Page,
  Range,
  ReactorQuery,
  RecordKey,
  Store,
  StoreDump,
  TokenHead,
  TokenTerm,
  WriteResult,
} from '../../src/store/index.js'
import { storedBytes } from '../../src/store/index.js'

/**
 * The store contract written out as plainly as it can be: one array per record kind, every read a
 * linear scan, every order a sort by the fields `Store`'s documentation names. It shares no code
 * with the stores it checks (only their types), keeps no index, and is not fast: it is the
 * reference the equivalence harness compares every store with, so each rule here is meant to be
 * read against `src/store/contract.ts` and `src/kernel/types.ts` (`Check`, `Op`) and seen to be right.
 *
 * Key and nonce hashes are SHA-256 hashes of random secrets, so no two records share one; the model
 * refuses to answer for a hash two records hold instead of picking one.
 */
export class ContractModel implements Store {
  private tenants: Tenant[] = []
  private applications: StoredApplication[] = []
  private tokens: StoredToken[] = []
  /** Links in the order they were made; `seq` is a link's place in that order. */
  private links: { link: Association; seq: number }[] = []
  private nextSeq = 0
  private transactions: StoredTransaction[] = []
  private locks: TokenLock[] = []
  private staged: StagedWrite[] = []
  private sessions: StoredSession[] = []
  private formulas: StoredFormula[] = []
  private reactors: Reactor[] = []
  private uses: FormulaUse[] = []
  private idempotency: IdempotencyRecord[] = []
  private webhooks: StoredWebhook[] = []
  private clientKeys: StoredClientKey[] = []
  private proxies: StoredProxy[] = []
  private intents: StoredTokenIntent[] = []
  private documents: StoredDocument[] = []
  private chunks: StoredDocumentChunk[] = []
  /** Outbox entries, in any order (reads sort them). */
  private outbox: OutboxEntry[] = []
  private logs: LogEntry[] = []

  async write(batch: { checks?: Check[]; ops: Op[] }): Promise<WriteResult> {
    for (const check of batch.checks ?? []) if (!this.holds(check)) return { ok: false, failed: check }
    for (const op of batch.ops) this.apply(json(op))
    return { ok: true }
  }

  private holds(c: Check): boolean {
    switch (c.check) {
      case 'token.absent':
        return this.token(c.tenant_id, c.id) === undefined
      case 'token.present':
        return this.token(c.tenant_id, c.id) !== undefined
      case 'token.unlocked': {
        const lock = this.lock(c.tenant_id, c.id)
        return lock === undefined || lock.transaction_id === c.except || lock.expires_at <= c.now
      }
      case 'lock.held':
        return this.lock(c.tenant_id, c.token_id)?.transaction_id === c.transaction_id
      case 'links.within':
        return this.linksOf(c.tenant_id, c.token_id).every((l) =>
          c.links.some((k) => k.parent_id === l.parent_id && k.child_id === l.child_id),
        )
      case 'token.unchanged':
        return same(this.token(c.tenant_id, c.id), c.token)
      case 'transaction.unchanged':
        return same(
          this.transactions.find((t) => t.tenant_id === c.tenant_id && t.id === c.id),
          c.transaction,
        )
      case 'association.absent':
        return this.link(c.tenant_id, c.parent_id, c.child_id) === undefined
      case 'association.present':
        return this.link(c.tenant_id, c.parent_id, c.child_id) !== undefined
      case 'session.unchanged':
        return same(
          this.sessions.find((s) => s.tenant_id === c.tenant_id && s.id === c.id),
          c.session,
        )
      case 'formula.present':
        return this.formulas.some(
          (f) => f.id === c.id && (f.tenant_id === c.tenant_id || f.tenant_id === null),
        )
      case 'formula.unused':
        return !this.uses.some((u) => u.formula_id === c.id)
      case 'reactor.unchanged':
        return same(
          this.reactors.find((r) => r.tenant_id === c.tenant_id && r.id === c.id),
          c.reactor,
        )
      case 'application.present':
        return this.applications.some((a) => a.tenant_id === c.tenant_id && a.id === c.id)
      case 'reactor.present':
        return this.reactors.some((r) => r.tenant_id === c.tenant_id && r.id === c.id)
      case 'application.unchanged':
        return same(
          this.applications.find((a) => a.tenant_id === c.tenant_id && a.id === c.id),
          c.application,
        )
      case 'idempotency.absent':
        return !this.idempotency.some((r) => r.tenant_id === c.tenant_id && r.id === c.id)
      case 'idempotency.claimed':
        return this.idempotency.some(
          (r) => r.tenant_id === c.tenant_id && r.id === c.id && r.claim === c.claim,
        )
      case 'token.fingerprint_absent':
        return !this.tokens.some(
          (t) =>
            t.tenant_id === c.tenant_id &&
            t.fingerprint === c.fingerprint &&
            (t.expires_at === undefined || t.expires_at > c.now),
        )
      case 'token_intent.present':
        return this.intents.some((i) => i.tenant_id === c.tenant_id && i.id === c.id)
      case 'webhook.present':
        return this.webhooks.some((w) => w.tenant_id === c.tenant_id && w.id === c.id)
      case 'count.within':
        return this.counted(c.tenant_id, c.kind) <= c.max
      case 'outbox.unchanged':
        return same(
          this.outbox.find((e) => e.tenant_id === c.tenant_id && e.id === c.id),
          c.entry,
        )
      case 'proxy.unchanged':
        return same(
          this.proxies.find((p) => p.tenant_id === c.tenant_id && p.id === c.id),
          c.proxy,
        )
      case 'tenant.unchanged':
        return same(
          this.tenants.find((t) => t.id === c.tenant_id),
          c.tenant,
        )
      default:
        return assertNever(c)
    }
  }

  private apply(op: Op): void {
    const other =
      <T extends { tenant_id: string | null; id: string }>(tenant: string | null, id: string) =>
      (r: T) =>
        !(r.tenant_id === tenant && r.id === id)
    switch (op.op) {
      case 'tenant.put':
        this.tenants = [...this.tenants.filter((t) => t.id !== op.tenant.id), op.tenant]
        return
      case 'tenant.delete':
        this.tenants = this.tenants.filter((t) => t.id !== op.id)
        return
      case 'application.put':
        this.applications = [
          ...this.applications.filter(other(op.application.tenant_id, op.application.id)),
          op.application,
        ]
        return
      case 'application.delete':
        this.applications = this.applications.filter(other(op.tenant_id, op.id))
        return
      case 'token.put':
        this.tokens = [...this.tokens.filter(other(op.token.tenant_id, op.token.id)), op.token]
        return
      case 'token.delete':
        // Only the token: the core deletes its links in the same write.
        this.tokens = this.tokens.filter(other(op.tenant_id, op.id))
        return
      case 'association.put': {
        const a = op.association
        // A link that exists stays as it is, in its place.
        if (this.link(a.tenant_id, a.parent_id, a.child_id)) return
        this.links.push({ link: a, seq: this.nextSeq++ })
        return
      }
      case 'association.delete':
        this.links = this.links.filter(
          ({ link }) =>
            !(
              link.tenant_id === op.tenant_id &&
              link.parent_id === op.parent_id &&
              link.child_id === op.child_id
            ),
        )
        return
      case 'transaction.put':
        this.transactions = [
          ...this.transactions.filter(other(op.transaction.tenant_id, op.transaction.id)),
          op.transaction,
        ]
        return
      case 'transaction.delete':
        this.transactions = this.transactions.filter(other(op.tenant_id, op.id))
        return
      case 'lock.put':
        this.locks = [
          ...this.locks.filter(
            (l) => !(l.tenant_id === op.lock.tenant_id && l.token_id === op.lock.token_id),
          ),
          op.lock,
        ]
        return
      case 'lock.delete':
        this.locks = this.locks.filter((l) => !(l.tenant_id === op.tenant_id && l.token_id === op.token_id))
        return
      case 'staged.put': {
        const w = op.staged
        this.staged = [
          ...this.staged.filter((x) => !sameStaged(x, w.tenant_id, w.transaction_id, w.token_id)),
          w,
        ]
        return
      }
      case 'staged.delete':
        this.staged = this.staged.filter((x) => !sameStaged(x, op.tenant_id, op.transaction_id, op.token_id))
        return
      case 'session.put':
        this.sessions = [...this.sessions.filter(other(op.session.tenant_id, op.session.id)), op.session]
        return
      case 'session.delete':
        this.sessions = this.sessions.filter(other(op.tenant_id, op.id))
        return
      case 'formula.put':
        this.formulas = [...this.formulas.filter(other(op.formula.tenant_id, op.formula.id)), op.formula]
        return
      case 'formula.delete':
        this.formulas = this.formulas.filter(other(op.tenant_id, op.id))
        return
      case 'reactor.put':
        this.reactors = [...this.reactors.filter(other(op.reactor.tenant_id, op.reactor.id)), op.reactor]
        return
      case 'reactor.delete':
        this.reactors = this.reactors.filter(other(op.tenant_id, op.id))
        return
      case 'formula_use.put': {
        const u = op.use
        const exists = this.uses.some(
          (x) =>
            x.formula_id === u.formula_id && x.tenant_id === u.tenant_id && x.reactor_id === u.reactor_id,
        )
        if (!exists) this.uses.push(u)
        return
      }
      case 'formula_use.delete':
        this.uses = this.uses.filter(
          (x) =>
            !(
              x.formula_id === op.formula_id &&
              x.tenant_id === op.tenant_id &&
              x.reactor_id === op.reactor_id
            ),
        )
        return
      case 'idempotency.put':
        this.idempotency = [...this.idempotency.filter(other(op.record.tenant_id, op.record.id)), op.record]
        return
      case 'idempotency.delete':
        this.idempotency = this.idempotency.filter(other(op.tenant_id, op.id))
        return
      case 'client_key.put':
        this.clientKeys = [...this.clientKeys.filter(other(op.key.tenant_id, op.key.id)), op.key]
        return
      case 'client_key.delete':
        this.clientKeys = this.clientKeys.filter(other(op.tenant_id, op.id))
        return
      case 'proxy.put':
        this.proxies = [...this.proxies.filter(other(op.proxy.tenant_id, op.proxy.id)), op.proxy]
        return
      case 'proxy.delete':
        this.proxies = this.proxies.filter(other(op.tenant_id, op.id))
        return
      case 'document.put':
        this.documents = [...this.documents.filter(other(op.document.tenant_id, op.document.id)), op.document]
        return
      case 'document_chunk.put': {
        const c = op.chunk
        const same = (x: StoredDocumentChunk) =>
          x.tenant_id === c.tenant_id && x.document_id === c.document_id && x.index === c.index
        this.chunks = [...this.chunks.filter((x) => !same(x)), c]
        return
      }
      case 'document.delete':
        this.documents = this.documents.filter(other(op.tenant_id, op.id))
        this.chunks = this.chunks.filter((x) => x.tenant_id !== op.tenant_id || x.document_id !== op.id)
        return
      case 'token_intent.put':
        this.intents = [...this.intents.filter(other(op.intent.tenant_id, op.intent.id)), op.intent]
        return
      case 'token_intent.delete':
        this.intents = this.intents.filter(other(op.tenant_id, op.id))
        return
      case 'webhook.put':
        this.webhooks = [...this.webhooks.filter(other(op.webhook.tenant_id, op.webhook.id)), op.webhook]
        return
      case 'webhook.delete':
        this.webhooks = this.webhooks.filter(other(op.tenant_id, op.id))
        return
      case 'outbox.put':
        this.outbox = [...this.outbox.filter(other(op.entry.tenant_id, op.entry.id)), op.entry]
        return
      case 'outbox.delete':
        this.outbox = this.outbox.filter(other(op.tenant_id, op.id))
        return
      case 'log.put':
        this.logs = [...this.logs.filter(other(op.entry.tenant_id, op.entry.id)), op.entry]
        return
      case 'log.delete':
        this.logs = this.logs.filter(other(op.tenant_id, op.id))
        return
      default:
        assertNever(op)
    }
  }

  private token(tenantId: string, id: string): StoredToken | undefined {
    return this.tokens.find((t) => t.tenant_id === tenantId && t.id === id)
  }
  private lock(tenantId: string, tokenId: string): TokenLock | undefined {
    return this.locks.find((l) => l.tenant_id === tenantId && l.token_id === tokenId)
  }
  private link(tenantId: string, parentId: string, childId: string): Association | undefined {
    return this.links.find(
      ({ link }) => link.tenant_id === tenantId && link.parent_id === parentId && link.child_id === childId,
    )?.link
  }
  private linksOf(tenantId: string, tokenId: string): Association[] {
    return this.links
      .map(({ link }) => link)
      .filter((l) => l.tenant_id === tenantId && (l.parent_id === tokenId || l.child_id === tokenId))
  }
  /** A parent's links in the order they were made. */
  private childLinks(tenantId: string, parentId: string) {
    return this.links
      .filter(({ link }) => link.tenant_id === tenantId && link.parent_id === parentId)
      .sort((a, b) => a.seq - b.seq)
  }

  // Reads: each answers copies.

  async getTenant(id: string) {
    return json(this.tenants.find((t) => t.id === id) ?? null)
  }
  async hasTenants() {
    return this.tenants.length > 0
  }
  async listTenants() {
    return json(sortBy(this.tenants, (t) => [t.id]))
  }
  async findKey(keyHash: string): Promise<KeyOwner | null> {
    const owners: KeyOwner[] = [
      ...this.applications
        .filter((a) => (a.keys ? a.keys.map((k) => k.key_hash) : [a.key_hash]).includes(keyHash))
        .map((application): KeyOwner => ({ kind: 'application', application })),
      ...this.sessions
        .filter((s) => s.key_hash === keyHash)
        .map((session): KeyOwner => ({ kind: 'session', session })),
    ]
    if (owners.length > 1) throw new Error(`ContractModel: two records hold the key hash ${keyHash}`)
    return json(owners[0] ?? null)
  }
  async getApplication(tenantId: string, id: string) {
    return json(this.applications.find((a) => a.tenant_id === tenantId && a.id === id) ?? null)
  }
  async listApplications(tenantId: string, query: Range & { ids?: string[] }) {
    const all = this.applications.filter((a) => a.tenant_id === tenantId && within(query.ids, a.id))
    return page(
      sortBy(all, (a) => [a.created_at, a.id]),
      query,
    )
  }
  async getToken(tenantId: string, id: string) {
    return json(this.token(tenantId, id) ?? null)
  }
  async hasAssociation(tenantId: string, parentId: string, childId: string) {
    return this.link(tenantId, parentId, childId) !== undefined
  }
  async listLinks(tenantId: string, tokenId: string) {
    return json(this.linksOf(tenantId, tokenId))
  }
  async listChildren(
    tenantId: string,
    parentId: string,
    query: Range & { ids?: string[]; types?: string[]; now: string },
  ): Promise<Page<StoredToken>> {
    const children = this.childLinks(tenantId, parentId)
      .map(({ link }) => this.token(tenantId, link.child_id))
      .filter((t): t is StoredToken => t !== undefined && live(t, query.now))
      .filter((t) => within(query.ids, t.id) && within(query.types, t.type))
    return page(children, query)
  }
  async listTokens(
    tenantId: string,
    query: Range & { ids?: string[]; types?: string[]; fingerprint?: string; now: string },
  ): Promise<Page<StoredToken>> {
    const all = this.tokens.filter(
      (t) =>
        t.tenant_id === tenantId &&
        live(t, query.now) &&
        within(query.ids, t.id) &&
        within(query.types, t.type) &&
        (query.fingerprint === undefined || t.fingerprint === query.fingerprint),
    )
    return page(
      sortBy(all, (t) => [t.id]),
      query,
    )
  }
  async findTokenIds(tenantId: string, query: { term?: TokenTerm; after?: string; limit: number }) {
    const ids = this.tokens
      .filter((t) => t.tenant_id === tenantId && (query.term === undefined || carries(t, query.term)))
      .map((t) => t.id)
      .filter((id) => query.after === undefined || id > query.after)
      .sort(compare)
    return ids.slice(0, Math.max(0, query.limit))
  }
  async findChildIds(tenantId: string, parentId: string, query: { after?: string; limit: number }) {
    const keys: ChildKey[] = this.childLinks(tenantId, parentId).map(({ link, seq }) => ({
      id: link.child_id,
      key: String(seq).padStart(16, '0'),
    }))
    return keys
      .filter((k) => query.after === undefined || k.key > query.after)
      .slice(0, Math.max(0, query.limit))
  }
  async getTokenHeads(tenantId: string, ids: readonly string[]): Promise<TokenHead[]> {
    // Each head carries what its sealed fields take, as the contract's stores do (the core
    // otherwise reads the stored record to measure it for a page's byte budget).
    return (await this.getTokens(tenantId, ids)).map(({ data, mask, ...head }) => ({
      ...head,
      stored_bytes: storedBytes({ data, mask }),
    }))
  }
  async getTokens(tenantId: string, ids: readonly string[]) {
    const found = [...new Set(ids)].map((id) => this.token(tenantId, id))
    return json(found.filter((t): t is StoredToken => t !== undefined))
  }
  async getTransaction(tenantId: string, id: string) {
    return json(this.transactions.find((t) => t.tenant_id === tenantId && t.id === id) ?? null)
  }
  async listTransactions(tenantId: string, query: { after?: string; limit: number }) {
    return keysetOf(this.transactions, tenantId, query)
  }
  async getStaged(tenantId: string, transactionId: string, tokenIds: readonly string[]) {
    const found = [...new Set(tokenIds)].map((id) =>
      this.staged.find((w) => sameStaged(w, tenantId, transactionId, id)),
    )
    return json(found.filter((w): w is StagedWrite => w !== undefined))
  }
  async listStaged(tenantId: string, transactionId: string, query: { after?: string; limit: number }) {
    const mine = this.staged.filter(
      (w) =>
        w.tenant_id === tenantId &&
        w.transaction_id === transactionId &&
        (query.after === undefined || compare(w.token_id, query.after) > 0),
    )
    return json(sortBy(mine, (w) => [w.token_id]).slice(0, Math.max(0, query.limit)))
  }
  async getSessionByNonce(tenantId: string, nonceHash: string) {
    const found = this.sessions.filter((s) => s.tenant_id === tenantId && s.nonce_hash === nonceHash)
    if (found.length > 1) throw new Error(`ContractModel: two sessions hold the nonce hash ${nonceHash}`)
    return json(found[0] ?? null)
  }
  async getFormula(tenantId: string | null, id: string) {
    const own =
      tenantId === null ? undefined : this.formulas.find((f) => f.tenant_id === tenantId && f.id === id)
    return json(own ?? this.formulas.find((f) => f.tenant_id === null && f.id === id) ?? null)
  }
  async listFormulas(tenantId: string, query: Range & { name?: string }) {
    const all = this.formulas.filter(
      (f) => (f.tenant_id === tenantId || f.tenant_id === null) && nameMatches(query.name, f.name),
    )
    // By name, then id; an official formula before a tenant's of the same name and id.
    return page(
      sortBy(all, (f) => [f.name, f.id, f.tenant_id === null ? '0' : '1']),
      query,
    )
  }
  async getReactor(tenantId: string, id: string) {
    return json(this.reactors.find((r) => r.tenant_id === tenantId && r.id === id) ?? null)
  }
  async listReactors(tenantId: string, query: ReactorQuery) {
    const all = this.reactors.filter(
      (r) => r.tenant_id === tenantId && nameMatches(query.name, r.name) && within(query.ids, r.id),
    )
    return page(
      sortBy(all, (r) => [r.created_at, r.id]),
      query,
    )
  }
  async listDocuments(tenantId: string, query: { after?: string; limit: number }) {
    const all = this.documents.filter(
      (d) => d.tenant_id === tenantId && (query.after === undefined || d.id > query.after),
    )
    return json(sortBy(all, (d) => [d.id]).slice(0, Math.max(0, query.limit)))
  }
  async getDocument(tenantId: string, id: string) {
    return json(this.documents.find((d) => d.tenant_id === tenantId && d.id === id) ?? null)
  }
  async getDocumentChunk(tenantId: string, documentId: string, index: number) {
    const found = this.chunks.find(
      (c) => c.tenant_id === tenantId && c.document_id === documentId && c.index === index,
    )
    return json(found ?? null)
  }
  async listTokenIntents(tenantId: string, query: { after?: string; limit: number }) {
    return keysetOf(this.intents, tenantId, query)
  }
  async getTokenIntent(tenantId: string, id: string) {
    return json(this.intents.find((i) => i.tenant_id === tenantId && i.id === id) ?? null)
  }
  async getClientKey(tenantId: string, id: string) {
    return json(this.clientKeys.find((k) => k.tenant_id === tenantId && k.id === id) ?? null)
  }
  async listClientKeys(tenantId: string, query: Range) {
    const all = this.clientKeys.filter((k) => k.tenant_id === tenantId)
    return page(
      sortBy(all, (k) => [k.created_at, k.id]),
      query,
    )
  }
  async getProxy(tenantId: string, id: string) {
    return json(this.proxies.find((p) => p.tenant_id === tenantId && p.id === id) ?? null)
  }
  async listProxies(tenantId: string, query: Range & { ids?: string[] }) {
    const ids = query.ids?.length ? query.ids : null
    const all = this.proxies.filter((p) => p.tenant_id === tenantId && (!ids || ids.includes(p.id)))
    return page(
      sortBy(all, (p) => [p.created_at, p.id]),
      query,
    )
  }
  async getWebhook(tenantId: string, id: string) {
    return json(this.webhooks.find((w) => w.tenant_id === tenantId && w.id === id) ?? null)
  }
  async listWebhooks(tenantId: string, query: Range) {
    const all = this.webhooks.filter((w) => w.tenant_id === tenantId)
    return page(
      sortBy(all, (w) => [w.created_at, w.id]),
      query,
    )
  }
  async getOutbox(tenantId: string, id: string) {
    return json(this.outbox.find((e) => e.tenant_id === tenantId && e.id === id) ?? null)
  }
  async listOutbox(tenantId: string, query: { after?: string; limit: number }) {
    const mine = sortBy(
      this.outbox.filter(
        (e) => e.tenant_id === tenantId && (query.after === undefined || e.id > query.after),
      ),
      (e) => [e.id],
    )
    return json(mine.slice(0, Math.max(0, query.limit)))
  }
  /** `unindexedLog`: the model keeps no index (its reads filter the entries themselves), so none is missed. */
  async unindexedLog(_tenantId: string, _entries: readonly LogEntry[]): Promise<string | null> {
    return null
  }
  /** `listLogs`, by a filter and a sort of every entry of the tenant (the model's way: plain, not fast). */
  async listLogs(tenantId: string, q: LogQuery) {
    const mine = this.logs.filter(
      (e) =>
        e.tenant_id === tenantId &&
        (q.entity_type === undefined || e.entity_type === q.entity_type) &&
        (q.entity_id === undefined || e.entity_id === q.entity_id) &&
        (q.from === undefined || e.created_at >= q.from) &&
        (q.to === undefined || e.created_at <= q.to),
    )
    const limit = Math.max(0, q.limit)
    if (q.order === 'chain') {
      const after = q.after?.id
      return json(
        sortBy(
          mine.filter((e) => after === undefined || e.id > after),
          (e) => [e.id],
        ).slice(0, limit),
      )
    }
    const key = (e: { created_at: string; id: string }) => `${e.created_at}\u0001${e.id}`
    const at = q.after && key(q.after)
    const sorted = sortBy(mine, (e) => [e.created_at, e.id])
    const ordered = q.order === 'newest' ? sorted.reverse() : sorted
    const past = ordered.filter((e) => at === undefined || (q.order === 'newest' ? key(e) < at : key(e) > at))
    return json(past.slice(0, limit))
  }
  async listDueOutbox(query: { before: string; limit: number; after?: DueKey }) {
    const a = query.after
    const past = (e: OutboxEntry) =>
      a === undefined ||
      e.due_at! > a.due_at ||
      (e.due_at === a.due_at && (e.tenant_id > a.tenant_id || (e.tenant_id === a.tenant_id && e.id > a.id)))
    const due = this.outbox.filter(
      (e) => e.state === 'pending' && e.due_at !== undefined && e.due_at <= query.before && past(e),
    )
    return json(sortBy(due, (e) => [e.due_at!, e.tenant_id, e.id]).slice(0, Math.max(0, query.limit)))
  }
  async getIdempotency(tenantId: string, id: string) {
    return json(this.idempotency.find((r) => r.tenant_id === tenantId && r.id === id) ?? null)
  }
  async listIdempotency(tenantId: string, query: { after?: string; limit: number }) {
    return keysetOf(this.idempotency, tenantId, query)
  }
  async countRecords(tenantId: string, kind: CountedKind): Promise<number> {
    return this.counted(tenantId, kind)
  }
  private counted(tenantId: string, kind: CountedKind): number {
    switch (kind) {
      case 'idempotency':
        return this.idempotency.filter((r) => r.tenant_id === tenantId).length
      case 'session.created':
        return this.sessions.filter((s) => s.tenant_id === tenantId && s.state === 'created').length
      case 'webhook':
        return this.webhooks.filter((w) => w.tenant_id === tenantId).length
      case 'outbox.pending':
        return this.outbox.filter((e) => e.tenant_id === tenantId && e.state === 'pending').length
      case 'log':
        return this.logs.filter((e) => e.tenant_id === tenantId).length
      case 'transaction.staged':
        return this.transactions
          .filter((t) => t.tenant_id === tenantId && t.state === 'open')
          .reduce((sum, t) => sum + (t.staged_chars ?? 0), 0)
      default:
        return assertNever(kind)
    }
  }
  async listExpired(query: { kind: ExpiringKind; before: string; limit: number }): Promise<RecordKey[]> {
    const due = (at: string | undefined) => at !== undefined && at <= query.before
    const records: { tenant_id: string; id: string }[] = {
      token: () => this.tokens.filter((t) => due(t.expires_at)),
      'token.cvc': () => this.tokens.filter((t) => due(t.cvc_expires_at)),
      session: () => this.sessions.filter((s) => due(s.expires_at)),
      application: () => this.applications.filter((a) => due(a.expires_at)),
      'transaction.open': () => this.transactions.filter((t) => t.state === 'open' && due(t.expires_at)),
      'transaction.ended': () => this.transactions.filter((t) => t.state !== 'open' && due(t.expires_at)),
      idempotency: () => this.idempotency.filter((r) => due(r.expires_at)),
      outbox: () => this.outbox.filter((e) => e.state !== 'pending' && due(e.expires_at)),
      token_intent: () => this.intents.filter((i) => due(i.expires_at)),
    }[query.kind]()
    return records.slice(0, Math.max(0, query.limit)).map((r) => ({ tenant_id: r.tenant_id, id: r.id }))
  }
  async dump(): Promise<StoreDump> {
    const byTenantAndId = <T extends { tenant_id: string | null; id: string }>(list: T[]) =>
      json(sortBy(list, (r) => [r.tenant_id ?? '', r.id]))
    return {
      tenants: json(sortBy(this.tenants, (t) => [t.id])),
      applications: byTenantAndId(this.applications),
      tokens: byTenantAndId(this.tokens),
      associations: json(
        sortBy(
          this.links.map(({ link }) => link),
          (a) => [a.tenant_id, a.parent_id, a.child_id],
        ),
      ),
      transactions: byTenantAndId(this.transactions),
      staged: json(sortBy(this.staged, (w) => [w.tenant_id, w.transaction_id, w.token_id])),
      sessions: byTenantAndId(this.sessions),
      formulas: byTenantAndId(this.formulas),
      reactors: byTenantAndId(this.reactors),
      idempotency: byTenantAndId(this.idempotency),
      webhooks: byTenantAndId(this.webhooks),
      client_keys: byTenantAndId(this.clientKeys),
      proxies: byTenantAndId(this.proxies),
      token_intents: byTenantAndId(this.intents),
      documents: byTenantAndId(this.documents),
      document_chunks: json(
        [...this.chunks].sort((a, b) =>
          a.tenant_id !== b.tenant_id
            ? a.tenant_id < b.tenant_id
              ? -1
              : 1
            : a.document_id !== b.document_id
              ? a.document_id < b.document_id
                ? -1
                : 1
              : a.index - b.index,
        ),
      ),
      outbox: byTenantAndId(this.outbox),
    }
  }
  async close() {}
}

/** A deep copy through JSON text: records are JSON. */
/** Whether `w` is the staged record of `(tenant, transaction, token)`. */
function sameStaged(w: StagedWrite, tenantId: string, transactionId: string, tokenId: string): boolean {
  return w.tenant_id === tenantId && w.transaction_id === transactionId && w.token_id === tokenId
}

function json<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T)
}

/** JSON text with object keys sorted: equal for values equal as JSON, key order aside. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => compare(a, b))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`
  }
  return JSON.stringify(value)
}

/** Whether a stored record exists and equals the given one as JSON. */
function same(stored: unknown, given: unknown): boolean {
  return stored !== undefined && canonical(stored) === canonical(given)
}

/** Strings in code-unit order (JavaScript's `<`). */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/** A sorted copy, by a tuple of strings compared field after field. */
function sortBy<T>(list: readonly T[], key: (t: T) => string[]): T[] {
  return [...list].sort((x, y) => {
    const a = key(x)
    const b = key(y)
    for (let i = 0; i < a.length; i++) {
      const c = compare(a[i]!, b[i]!)
      if (c !== 0) return c
    }
    return 0
  })
}

/** The page `query` names of `all`, with the count of all. */
function page<T>(all: T[], query: Range): Page<T> {
  return { items: json(all.slice(query.offset, query.offset + query.limit)), total: all.length }
}

/** Whether `value` passes a filter list: none or empty keeps everything. */
function within(filter: readonly string[] | undefined, value: string): boolean {
  return filter === undefined || filter.length === 0 || filter.includes(value)
}

/** Whether a token has not expired at `now`. */
function live(t: StoredToken, now: string): boolean {
  return t.expires_at === undefined || t.expires_at > now
}

/** Whether a token carries an exact term (see `TokenTerm`). */
function carries(t: StoredToken, term: TokenTerm): boolean {
  switch (term.kind) {
    case 'id':
      return t.id === term.value
    case 'type':
      return t.type === term.value
    case 'fingerprint':
      return t.fingerprint === term.value
    case 'container':
      return t.containers.includes(term.value)
    case 'search_index':
      return (t.search_index_hashes ?? []).includes(term.value)
    case 'metadata': {
      const value = Object.hasOwn(t.metadata, term.key) ? t.metadata[term.key] : undefined
      return typeof value === 'string' && value.toLowerCase() === term.value
    }
    default:
      return assertNever(term)
  }
}

/**
 * The `name` filter of `listFormulas` and `listReactors`: case-insensitive; without `*` the name
 * contains the filter; with `*`, the pieces between stars appear in order, the first at the start
 * and the last at the end.
 */
function nameMatches(filter: string | undefined, name: string): boolean {
  if (filter === undefined || filter === '') return true
  const f = filter.toLowerCase()
  const n = name.toLowerCase()
  if (!f.includes('*')) return n.includes(f)
  const pieces = f.split('*')
  const first = pieces[0]!
  const last = pieces[pieces.length - 1]!
  if (!n.startsWith(first)) return false
  let at = first.length
  for (const piece of pieces.slice(1, -1)) {
    const found = n.indexOf(piece, at)
    if (found < 0) return false
    at = found + piece.length
  }
  return n.length - last.length >= at && n.endsWith(last)
}

/** A keyset page of the tenant's records among `records` by id (code-unit order), after `after`. */
function keysetOf<R extends { tenant_id: string; id: string }>(
  records: readonly R[],
  tenantId: string,
  query: { after?: string; limit: number },
): R[] {
  const mine = records.filter(
    (r) => r.tenant_id === tenantId && (query.after === undefined || compare(r.id, query.after) > 0),
  )
  return json(sortBy(mine, (r) => [r.id]).slice(0, Math.max(0, query.limit)))
}
