import type { IdempotencyRecord, StagedWrite, StoredToken, Tenant } from '../kernel/index.js'
import { nextTurn } from '../kernel/index.js'
import type { Check, Op } from '../store/index.js'
import { delegatingStore, type Store } from '../store/index.js'
import { openedClientKeyReads, sealClientKeyOps } from './client-key-sealing.js'
import { openChunk } from './document-sealing.js'
import { openTokenIntent, sealTokenIntent } from './intent-sealing.js'
import { OPEN_STEP_BYTES, openStagedInSteps, openTokensInSteps } from './open-in-steps.js'
import { openOutbox, outboxSealsData, sealOutbox } from './outbox-sealing.js'
import { openProxy, sealProxy } from './proxy-sealing.js'
import {
  openAnswer,
  openReactor,
  openToken,
  openTokenInSteps,
  type Sealing,
  sealOp,
  sealReactor,
  sealToken,
} from './sealing.js'
import type { Keyring } from './tenant-keyring.js'

export { Keyring } from './tenant-keyring.js'

/** What the service hands the sealed store: the rules it applies that are not about sealing. */
export interface SealedStoreOptions {
  /** The purpose of the keyed hashes of evaluated search indexes (`search_index_hashes`). */
  searchIndexPurpose: string
  /**
   * Every token opened goes through this before it is answered (the service drops a card's cvc
   * past its deadline here); answers the token as its readers see it.
   */
  asRead(token: StoredToken): StoredToken
}

/**
 * `inner` with token `data` and `mask` encrypted on the way in and decrypted on the way out
 * (AES-256-GCM under the tenant's data key; `data` and `mask` are sealed together as one
 * ciphertext kept in `data`, whose additional authenticated data is the record kind, tenant id and
 * token id, so a ciphertext moved to another token, tenant or kind of record does not decrypt, and
 * a token record holding a `mask` beside sealed data is refused).
 * Everything else — ids, types, containers, metadata, timestamps — passes through in the clear.
 * Staged writes of transactions are sealed the same way, and so are the answers kept for
 * idempotency keys (they may hold token data) and reactors' `configuration` (third parties' API
 * keys: names and values in one ciphertext, bound to the reactor's tenant and id). `dump()` answers records as stored
 * (sealed). Legacy plaintext values (written before encryption) read as they are.
 *
 * Every token read (gets, lists, staged writes of transactions) opens here, so this is where the
 * caller's rule for reads applies (`options.asRead`: the service's card cvc expiry).
 *
 * `inner` may be a class: each method of the contract is delegated by name (`delegatingStore`).
 */
export function sealedStore(inner: Store, keyring: Keyring, options: SealedStoreOptions): Store {
  const s: Sealing = {
    keyOf: (tenantId, version) => keyring.keyFor(tenantId, version),
    sealKeyOf: (tenantId) => keyring.sealKey(tenantId),
    searchIndexPurpose: options.searchIndexPurpose,
    asRead: options.asRead,
  }
  // A page opens in bounded steps with a turn between two: another tenant's request runs meanwhile.
  const openPage = (tokens: StoredToken[]) => openTokensInSteps(s, tokens)
  const opened = (staged: StagedWrite[]) => openStagedInSteps(s, staged)
  return delegatingStore(inner, {
    async write(batch) {
      // A client key's private key is sealed first; the rest of the ops as their kinds are.
      const keyed = await sealClientKeyOps(s, batch.ops)
      const ops = await sealedInSteps(s, keyed)
      const checks = batch.checks
        ? await Promise.all(batch.checks.map((c) => sealCheck(s, inner, c)))
        : undefined
      return inner.write(checks ? { checks, ops } : { ops })
    },
    async getToken(tenantId, id) {
      const token = await inner.getToken(tenantId, id)
      // A large token opens in steps (`OPEN_STEP_BYTES`): another tenant's request runs meanwhile.
      return token && openTokenInSteps(s, token, OPEN_STEP_BYTES)
    },
    async listTokens(tenantId, query) {
      const page = await inner.listTokens(tenantId, query)
      return { ...page, items: await openPage(page.items) }
    },
    // Heads hold nothing sealed (`getTokenHeads` passes through); only what is answered opens.
    async getTokens(tenantId, ids) {
      return openPage(await inner.getTokens(tenantId, ids))
    },
    async listChildren(tenantId, parentId, query) {
      const page = await inner.listChildren(tenantId, parentId, query)
      return { ...page, items: await openPage(page.items) }
    },
    async getStaged(tenantId, transactionId, tokenIds) {
      return opened(await inner.getStaged(tenantId, transactionId, tokenIds))
    },
    async listStaged(tenantId, transactionId, query) {
      return opened(await inner.listStaged(tenantId, transactionId, query))
    },
    async getReactor(tenantId, id) {
      const reactor = await inner.getReactor(tenantId, id)
      return reactor && openReactor(s, reactor)
    },
    async listReactors(tenantId, query) {
      const page = await inner.listReactors(tenantId, query)
      return { ...page, items: await Promise.all(page.items.map((r) => openReactor(s, r))) }
    },
    ...openedClientKeyReads(s, inner),
    async getProxy(tenantId, id) {
      const proxy = await inner.getProxy(tenantId, id)
      return proxy && openProxy(s, proxy)
    },
    async listProxies(tenantId, query) {
      const page = await inner.listProxies(tenantId, query)
      return { ...page, items: await Promise.all(page.items.map((p) => openProxy(s, p))) }
    },
    async getTokenIntent(tenantId, id) {
      const intent = await inner.getTokenIntent(tenantId, id)
      return intent && openTokenIntent(s, intent)
    },
    async listTokenIntents(tenantId, query) {
      return Promise.all((await inner.listTokenIntents(tenantId, query)).map((i) => openTokenIntent(s, i)))
    },
    getDocumentChunk: (t, id, index) =>
      inner.getDocumentChunk(t, id, index).then((c) => c && openChunk(s, c)),
    async getOutbox(tenantId, id) {
      const entry = await inner.getOutbox(tenantId, id)
      return entry && openOutbox(s, entry)
    },
    async listOutbox(tenantId, query) {
      return Promise.all((await inner.listOutbox(tenantId, query)).map((e) => openOutbox(s, e)))
    },
    async listDueOutbox(query) {
      return Promise.all((await inner.listDueOutbox(query)).map((e) => openOutbox(s, e)))
    },
    async getIdempotency(tenantId, id) {
      const record = await inner.getIdempotency(tenantId, id)
      return record && openRecord(s, record)
    },
    async listIdempotency(tenantId, query) {
      return Promise.all((await inner.listIdempotency(tenantId, query)).map((r) => openRecord(s, r)))
    },
  })
}

/** An idempotency record with its kept answer opened. */
async function openRecord(s: Sealing, record: IdempotencyRecord): Promise<IdempotencyRecord> {
  if (record.answer === undefined) return record
  return { ...record, answer: await openAnswer(s, { ...record, answer: record.answer }) }
}

/** What sealing `op` weighs, in characters of token data (an object's counted as 1 KiB): 0 when it seals none. */
function sealWeight(op: Op): number {
  const token = op.op === 'token.put' ? op.token : op.op === 'staged.put' ? op.staged.token : null
  if (!token) return 0
  return typeof token.data === 'string' ? token.data.length : 1024
}

/**
 * `ops` sealed, a turn for other work between two steps once `OPEN_STEP_BYTES` of token data have
 * been sealed: a commit of 1 000 staged tokens of 16 KB sealed its 16 MiB in one turn. A write of
 * a few small tokens seals at once, as before. (`openInSteps` counts each item 16 KiB at the least,
 * which would give every tokenize of 17 small tokens a turn: here only token data weighs.)
 */
async function sealedInSteps(s: Sealing, ops: readonly Op[]): Promise<Op[]> {
  let total = 0
  for (const op of ops) total += sealWeight(op)
  if (total <= OPEN_STEP_BYTES) return Promise.all(ops.map((op) => sealedOp(s, op)))
  const sealed: Op[] = []
  let step = 0
  for (const op of ops) {
    const weight = sealWeight(op)
    if (step > 0 && step + weight > OPEN_STEP_BYTES) {
      await nextTurn()
      step = 0
    }
    sealed.push(await sealedOp(s, op))
    step += weight
  }
  return sealed
}

/**
 * `op` as stored: sealed where its kind holds data, else `op` itself, at once. Most ops of a write
 * seal nothing (its audit entries, a webhook's events) and take no promise of their own.
 */
function sealedOp(s: Sealing, op: Op): Op | Promise<Op> {
  switch (op.op) {
    case 'proxy.put':
      return sealProxy(s, op.proxy).then((proxy) => ({ ...op, proxy }))
    case 'outbox.put':
      return outboxSealsData(op.entry) ? sealOutbox(s, op.entry).then((entry) => ({ ...op, entry })) : op
    case 'token_intent.put':
      return sealTokenIntent(s, op.intent).then((intent) => ({ ...op, intent }))
    case 'log.put':
      return op
    default:
      return sealOp(s, op)
  }
}

/**
 * A guard as stored: a `*.unchanged` guard compares with the sealed record (a transaction record
 * holds nothing sealed); any other guard is the one given, at once (no promise of its own).
 */
function sealCheck(s: Sealing, inner: Store, check: Check): Check | Promise<Check> {
  switch (check.check) {
    case 'reactor.unchanged':
      return sealedForGuard(
        check.reactor,
        (r) => openReactor(s, r),
        (r) => sealReactor(s, r),
        () => inner.getReactor(check.tenant_id, check.id),
      ).then((reactor) => ({ ...check, reactor }))
    case 'proxy.unchanged':
      return sealedForGuard(
        check.proxy,
        (p) => openProxy(s, p),
        (p) => sealProxy(s, p),
        () => inner.getProxy(check.tenant_id, check.id),
      ).then((proxy) => ({ ...check, proxy }))
    case 'outbox.unchanged':
      if (!outboxSealsData(check.entry)) return check
      return sealedForGuard(
        check.entry,
        (e) => openOutbox(s, e),
        (e) => sealOutbox(s, e),
        () => inner.getOutbox(check.tenant_id, check.id),
      ).then((entry) => ({ ...check, entry }))
    case 'token.unchanged':
      return sealedForGuard(
        check.token,
        (t) => openToken(s, t),
        (t) => sealToken(s, t),
        () => inner.getToken(check.tenant_id, check.id),
      ).then((token) => ({ ...check, token }))
    default:
      return check
  }
}

/**
 * The sealed record an `*.unchanged` guard compares with for the opened record `given`: the
 * stored one, when it opens to `given`; else `given` sealed anew, which no stored ciphertext
 * equals, so the guard fails. (The opened record carries nothing of the sealed one: the stored
 * record is read again here, and the store's own check then compares it within the write.)
 */
async function sealedForGuard<T extends object>(
  given: T,
  open: (sealed: T) => T | Promise<T>,
  seal: (opened: T) => T | Promise<T>,
  readStored: () => Promise<T | null>,
): Promise<T> {
  const stored = await readStored()
  if (stored && JSON.stringify(await open(stored)) === JSON.stringify(given)) return stored
  return seal(given)
}

/** The tenant as shown to callers: its id, name and creation time, never its wrapped keys (`data_key`, `keys`). */
export function publicTenant(tenant: Tenant): Tenant {
  return { id: tenant.id, name: tenant.name, created_at: tenant.created_at }
}
