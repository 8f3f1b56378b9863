import type { StoredToken } from '../../src/kernel/index.js'
import { assertNever } from '../../src/kernel/index.js'
import type { Check, Op } from '../../src/store/index.js'
import { applicationKeyHashes } from '../../src/store/index.js'
import { lockKeyValue } from './keys.js'

const name = (...parts: string[]) => parts.join('\u0000')
const token = (tenantId: string, id: string) => name('token', tenantId, id)
/**
 * A token's lock record shares its token's name (one advisory lock for both): every write that
 * writes a token also reads its lock record (`token.unlocked`), so this costs no parallelism, and a
 * commit or rollback of n staged tokens takes n locks for them instead of 2n (PostgreSQL's lock
 * table holds about 64 per connection slot, shared by every session).
 */
const lock = (tenantId: string, tokenId: string) => token(tenantId, tokenId)
const link = (tenantId: string, parentId: string, childId: string) =>
  name('link', tenantId, parentId, childId)
const transaction = (tenantId: string, id: string) => name('transaction', tenantId, id)
const formula = (tenantId: string | null, id: string) => name('formula', tenantId ?? '', id)
const formulaUse = (formulaId: string) => name('formula-use', formulaId)
const fingerprint = (tenantId: string, value: string) => name('fingerprint', tenantId, value)
const countName = (c: { tenant_id: string; kind: string }) => name('count', c.tenant_id, c.kind)

/** The records a check reads, by name: the guard is a condition on exactly these. */
function checkNames(c: Check): string[] {
  switch (c.check) {
    case 'token.absent':
    case 'token.present':
    case 'token.unchanged':
      return [token(c.tenant_id, c.id)]
    case 'token.unlocked':
      return [lock(c.tenant_id, c.id)]
    case 'lock.held':
      return [lock(c.tenant_id, c.token_id)]
    case 'links.within':
      // Every link put names both its tokens: this orders the guard with them.
      return [token(c.tenant_id, c.token_id)]
    case 'association.absent':
    case 'association.present':
      return [link(c.tenant_id, c.parent_id, c.child_id)]
    case 'transaction.unchanged':
      return [transaction(c.tenant_id, c.id)]
    case 'session.unchanged':
      return [name('session', c.tenant_id, c.id)]
    case 'formula.present':
      return [formula(c.tenant_id, c.id), formula(null, c.id)]
    case 'formula.unused':
      return [formulaUse(c.id)]
    case 'application.present':
    case 'application.unchanged':
      return [name('application', c.tenant_id, c.id)]
    case 'reactor.present':
    case 'reactor.unchanged':
      return [name('reactor', c.tenant_id, c.id)]
    case 'idempotency.absent':
    case 'idempotency.claimed':
      return [name('idempotency', c.tenant_id, c.id)]
    case 'token.fingerprint_absent':
      return [fingerprint(c.tenant_id, c.fingerprint)]
    case 'token_intent.present':
      return [name('token_intent', c.tenant_id, c.id)]
    case 'webhook.present':
      return [name('webhook', c.tenant_id, c.id)]
    case 'outbox.unchanged':
      return [name('outbox', c.tenant_id, c.id)]
    case 'proxy.unchanged':
      return [name('proxy', c.tenant_id, c.id)]
    case 'count.within':
      // Held exclusive, writes that keep one bound serialize on it (shared with a slot: see count-slots.ts).
      return [countName(c)]
    case 'tenant.unchanged':
      return [name('tenant', c.tenant_id)]
    default:
      return assertNever(c)
  }
}

/** The records an op writes, by name, including those a guard reads about it (locks, links, uses). */
/** The lock of the document an op writes (its head or one of its chunks). */
function documentLock(
  op: Extract<Op, { op: 'document.put' | 'document_chunk.put' | 'document.delete' }>,
): string {
  if (op.op === 'document.put') return name('document', op.document.tenant_id, op.document.id)
  if (op.op === 'document_chunk.put') return name('document', op.chunk.tenant_id, op.chunk.document_id)
  return name('document', op.tenant_id, op.id)
}

function opNames(op: Op): string[] {
  switch (op.op) {
    case 'tenant.put':
      return [name('tenant', op.tenant.id)]
    case 'tenant.delete':
      return [name('tenant', op.id)]
    case 'application.put':
      return [
        name('application', op.application.tenant_id, op.application.id),
        ...applicationKeyHashes(op.application).map((hash) => name('key', hash)),
      ]
    case 'application.delete':
      return [name('application', op.tenant_id, op.id)]
    case 'token.put':
      // Its fingerprint is named shared, apart (see `recordNames`).
      return [token(op.token.tenant_id, op.token.id)]
    case 'token.delete':
      return [token(op.tenant_id, op.id)]
    case 'association.put': {
      const a = op.association
      return [
        link(a.tenant_id, a.parent_id, a.child_id),
        token(a.tenant_id, a.parent_id),
        token(a.tenant_id, a.child_id),
      ]
    }
    case 'association.delete':
      return [link(op.tenant_id, op.parent_id, op.child_id)]
    case 'transaction.put':
      return [transaction(op.transaction.tenant_id, op.transaction.id)]
    case 'transaction.delete':
      return [transaction(op.tenant_id, op.id)]
    // A staged record is written only with its transaction, under its guard: named by it (one lock).
    case 'staged.put':
      return [transaction(op.staged.tenant_id, op.staged.transaction_id)]
    case 'staged.delete':
      return [transaction(op.tenant_id, op.transaction_id)]
    case 'lock.put':
      return [lock(op.lock.tenant_id, op.lock.token_id)]
    case 'lock.delete':
      return [lock(op.tenant_id, op.token_id)]
    case 'session.put': {
      const s = op.session
      return [
        name('session', s.tenant_id, s.id),
        name('nonce', s.tenant_id, s.nonce_hash),
        name('key', s.key_hash),
      ]
    }
    case 'session.delete':
      return [name('session', op.tenant_id, op.id)]
    case 'formula.put':
      return [formula(op.formula.tenant_id, op.formula.id)]
    case 'formula.delete':
      return [formula(op.tenant_id, op.id)]
    case 'reactor.put':
      return [name('reactor', op.reactor.tenant_id, op.reactor.id)]
    case 'formula_use.put':
      return [formulaUse(op.use.formula_id)]
    case 'formula_use.delete':
      return [formulaUse(op.formula_id)]
    case 'reactor.delete':
      return [name('reactor', op.tenant_id, op.id)]
    case 'idempotency.put':
      return [name('idempotency', op.record.tenant_id, op.record.id)]
    case 'idempotency.delete':
      return [name('idempotency', op.tenant_id, op.id)]
    case 'client_key.put':
      return [name('client_key', op.key.tenant_id, op.key.id)]
    case 'client_key.delete':
      return [name('client_key', op.tenant_id, op.id)]
    case 'proxy.put':
      return [name('proxy', op.proxy.tenant_id, op.proxy.id)]
    case 'proxy.delete':
      return [name('proxy', op.tenant_id, op.id)]
    case 'token_intent.put':
      return [name('token_intent', op.intent.tenant_id, op.intent.id)]
    case 'token_intent.delete':
      return [name('token_intent', op.tenant_id, op.id)]
    case 'document.put':
    case 'document_chunk.put':
    case 'document.delete':
      return [documentLock(op)]
    case 'webhook.put':
      return [name('webhook', op.webhook.tenant_id, op.webhook.id)]
    case 'webhook.delete':
      return [name('webhook', op.tenant_id, op.id)]
    case 'outbox.put':
      return [name('outbox', op.entry.tenant_id, op.entry.id)]
    case 'outbox.delete':
      return [name('outbox', op.tenant_id, op.id)]
    // An entry's id is new to every write (its lane and seq), and no guard reads entries: no lock.
    case 'log.put':
    case 'log.delete':
      return []
    default:
      return assertNever(op)
  }
}

/** How a write holds a record's lock: `shared` with other shared holders, or `exclusive`. */
export type LockMode = 'shared' | 'exclusive'

/**
 * The names of the records a batch's checks read and its ops write, each with the mode of its lock.
 * Two writes conflict exactly when they share a name that one of them holds exclusive: each guard
 * reads only records it names (a key, a lock, a link, a formula's use), and each op writes only
 * records it names (a token's links go with the token's name, which every link put and check of it
 * names too). Releases (a deleted session's nonce, a token's old fingerprint) are not named: they
 * only make guards hold more often, so a guard that ran before one and failed is ordered before it.
 *
 * Bounds (`count.within`): the bound's lock exclusive, or, with `countSlot`, shared and that slot's
 * lock exclusive (`boundsShared` in count-slots.ts says when, and why the bound still holds).
 *
 * Fingerprints: a shared/exclusive pair of advisory locks. `token.fingerprint_absent` (a
 * deduplicating create) holds the fingerprint exclusive; a `token.put` holds its fingerprint
 * shared. So a deduplicating create waits for the puts of that fingerprint in flight and they wait
 * for it — its guard reads every token of the fingerprint committed before it commits, and two
 * deduplicating creates of one value run one at a time — while plain puts of one value (many
 * customers tokenizing the same test card, a retried batch) never wait on each other. Not a unique
 * index: tokens may share a fingerprint (creates without deduplication, expired tokens), and
 * `fingerprint_absent` also reads `expires_at` against `now`, which no index constraint can express.
 */
export function recordNames(
  checks: readonly Check[],
  ops: readonly Op[],
  countSlot?: number,
): Map<string, LockMode> {
  const names = new Map<string, LockMode>()
  const add = (n: string, mode: LockMode) => {
    if (mode === 'exclusive' || !names.has(n)) names.set(n, mode)
  }
  for (const c of checks) {
    if (c.check === 'count.within' && countSlot !== undefined) {
      add(countName(c), 'shared')
      add(name('count', c.tenant_id, c.kind, String(countSlot)), 'exclusive')
    } else for (const n of checkNames(c)) add(n, 'exclusive')
  }
  for (const op of ops) {
    for (const n of opNames(op)) add(n, 'exclusive')
    if (op.op === 'token.put' && op.token.fingerprint !== undefined)
      add(fingerprint(op.token.tenant_id, op.token.fingerprint), 'shared')
  }
  return names
}

/**
 * The locks of a plain create (`plainCreate` in ops.ts): its fingerprint's, shared (none without
 * one). Not its token's: the core made the id, so no other write names that token before the
 * create commits, and the primary key orders two INSERTs of one id.
 */
export function plainCreateNames(t: StoredToken): string[] {
  return t.fingerprint === undefined ? [] : [fingerprint(t.tenant_id, t.fingerprint)]
}

/**
 * The locks of creates with webhook deliveries (`hookedCreate` in ops.ts): each fingerprint's,
 * shared, as a plain create's (`plainCreateNames`); and their bound's, shared, with the count slot
 * `countSlot` exclusive (see count-slots.ts). Neither the token's nor its outbox entries': their
 * ids are new, and each table's primary key orders two INSERTs of one id.
 */
export function hookedCreateNames(
  creates: readonly { token: StoredToken; bound: Check }[],
  countSlot: number,
): Map<string, LockMode> {
  const names = new Map<string, LockMode>()
  for (const c of creates) {
    for (const n of plainCreateNames(c.token)) if (!names.has(n)) names.set(n, 'shared')
    for (const [n, mode] of recordNames([c.bound], [], countSlot)) names.set(n, mode)
  }
  return names
}

/**
 * Advisory-lock keys of one store: 64-bit hashes of the schema and a record name, so stores in
 * different schemas of one database do not contend; a hash collision only makes two records share
 * a lock (more waiting, never less safety). There is no tenant-wide or store-wide lock.
 */
export class LockKeys {
  private readonly cache = new Map<string, bigint>()

  constructor(private readonly schema: string) {}

  /** The key of one record's lock (decimal). */
  key(recordName: string): string {
    return this.value(recordName).toString()
  }

  private value(recordName: string): bigint {
    let key = this.cache.get(recordName)
    if (key === undefined) {
      if (this.cache.size >= 10_000) this.cache.clear()
      key = this.hash(recordName)
      this.cache.set(recordName, key)
    }
    return key
  }

  private hash(recordName: string): bigint {
    return lockKeyValue(`tokenvault\u0000${this.schema}\u0000${recordName}`)
  }

  /**
   * The keys of shared locks on `names` (`plainCreateNames`), ascending, each once, as `order`
   * gives them. Hashed without the cache: a create's fingerprint is seldom asked for again (each
   * new value its own), so caching them would cost each create a map entry and evict the names that
   * are asked again.
   */
  sharedKeys(names: readonly string[]): string[] {
    const keys = names.map((n) => this.hash(n))
    if (keys.length > 1) keys.sort((x, y) => (x < y ? -1 : x > y ? 1 : 0))
    return keys.filter((k, i) => i === 0 || k !== keys[i - 1]).map(String)
  }

  /**
   * The advisory locks of `names` as `tv_write` takes them: keys in ascending order (every write
   * takes its locks in this one global order, so writes never deadlock on them) and whether each is
   * shared. Two names whose keys collide (or one name given twice, as by several writes taken
   * together) share one lock, exclusive if either is.
   */
  order(names: Iterable<readonly [string, LockMode]>): { keys: string[]; shared: boolean[] } {
    const modes = new Map<bigint, LockMode>()
    for (const [n, mode] of names) {
      const key = this.value(n)
      if (mode === 'exclusive' || !modes.has(key)) modes.set(key, mode)
    }
    const sorted = [...modes.keys()].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0))
    return { keys: sorted.map(String), shared: sorted.map((k) => modes.get(k) === 'shared') }
  }
}
