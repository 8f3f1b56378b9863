import type { Check, Json, Op, Reactor, StagedWrite, StoredToken, Tenant } from '../kernel/index.js'
import { ServiceError, withTokenFields } from '../kernel/index.js'
import { delegatingStore, type Store } from '../store/index.js'
import {
  type KeyProvider,
  keyedHash,
  newDataKey,
  openValue,
  sealValue,
  type TenantKey,
  tenantKey,
  type WrappedDataKey,
} from './keyring.js'

/**
 * How a sealed token field is stored: IV ‖ ciphertext ‖ GCM tag, as base64 (what this store writes)
 * or as the bytes themselves (a store may keep them so: the file store's `tokenCodec`).
 */
type Sealed = { $sealed: string | Uint8Array }

/**
 * The ciphertext a sealed field holds (`{ $sealed }` and nothing else): its base64 or its bytes;
 * `undefined` for anything else. A store that keeps sealed fields its own way (the file store's
 * `tokenCodec`) recognizes them with this.
 */
export function sealedPayload(value: unknown): string | Uint8Array | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined
  const sealed = (value as { $sealed?: unknown }).$sealed
  if (typeof sealed !== 'string' && !(sealed instanceof Uint8Array)) return undefined
  return Object.keys(value).length === 1 ? sealed : undefined
}

const isSealed = (value: unknown): value is Sealed => sealedPayload(value) !== undefined

/** The additional authenticated data of a token's sealed fields: its tenant and id. */
const aadOf = (tenantId: string, tokenId: string) => `tokenvault:token:v1:${tenantId}:${tokenId}`

/** The additional authenticated data of an idempotency record's sealed answer: its tenant and id. */
const answerAad = (r: { tenant_id: string; id: string }) => `tokenvault:idempotency:v1:${r.tenant_id}:${r.id}`

/** The additional authenticated data of a reactor's sealed configuration: its tenant and id. */
const reactorAad = (r: { tenant_id: string; id: string }) => `tokenvault:reactor:v1:${r.tenant_id}:${r.id}`

/** The error an unreadable reactor configuration answers with: it names the reactor, never its bytes. */
const unreadableReactor = (id: string) =>
  new ServiceError(
    'unreadable',
    `the stored configuration of reactor ${id} fails its integrity check and can't be read`,
  )

/** The error every unreadable token answers with: it names the token, never its bytes. */
const unreadable = (id: string) =>
  new ServiceError('unreadable', `the stored data of token ${id} fails its integrity check and can't be read`)

/**
 * The tenants' data keys: each tenant has one random 32-byte data key, stored beside the tenant
 * record wrapped by the master key (`data_key`). `providers[0]` wraps new keys; every provider
 * given can unwrap (so old and new master keys both read during a rotation). Unwrapped keys are
 * cached for the life of the service.
 */
export class Keyring {
  private readonly cache = new Map<string, Promise<TenantKey>>()
  /** The same keys once unwrapped, for the hot path (no promise to await). */
  private readonly ready = new Map<string, TenantKey>()

  constructor(
    private readonly store: Store,
    private readonly providers: readonly KeyProvider[],
  ) {}

  /** A new data key for a tenant about to be created, wrapped for its record. */
  async newTenantKey(tenantId: string): Promise<WrappedDataKey> {
    const dataKey = newDataKey()
    const wrapped = await this.providers[0]!.wrap(dataKey, tenantId)
    const key = tenantKey(dataKey)
    this.cache.set(tenantId, Promise.resolve(key))
    this.ready.set(tenantId, key)
    return { key_id: this.providers[0]!.keyId, wrapped: Buffer.from(wrapped).toString('base64') }
  }

  /** The tenant's key, unwrapped (and made, for a tenant from before encryption at rest). */
  key(tenantId: string): Promise<TenantKey> {
    let key = this.cache.get(tenantId)
    if (!key) {
      key = this.load(tenantId)
      this.cache.set(tenantId, key)
      key.then(
        (k) => this.ready.set(tenantId, k),
        () => this.cache.delete(tenantId),
      )
    }
    return key
  }

  /** The tenant's key if it is already unwrapped (then no await is needed), else undefined. */
  loaded(tenantId: string): TenantKey | undefined {
    return this.ready.get(tenantId)
  }

  /** Unwraps `wrapped` for `tenantId` with the provider it names. Throws a clear error on a wrong key. */
  async unwrap(tenantId: string, wrapped: WrappedDataKey): Promise<Uint8Array> {
    const provider = this.providers.find((p) => p.keyId === wrapped.key_id)
    if (!provider) {
      throw new Error(
        `masterKey: tenant ${tenantId}'s data key is wrapped by master key ${wrapped.key_id}, which this service was not given (it has ${this.providers.map((p) => p.keyId).join(', ')})`,
      )
    }
    try {
      return await provider.unwrap(Buffer.from(wrapped.wrapped, 'base64'), tenantId)
    } catch {
      throw new Error(
        `masterKey: master key ${wrapped.key_id} could not unwrap tenant ${tenantId}'s data key`,
      )
    }
  }

  /** Wraps `dataKey` for `tenantId` with the current master key. */
  async wrap(tenantId: string, dataKey: Uint8Array): Promise<WrappedDataKey> {
    const wrapped = await this.providers[0]!.wrap(dataKey, tenantId)
    return { key_id: this.providers[0]!.keyId, wrapped: Buffer.from(wrapped).toString('base64') }
  }

  private async load(tenantId: string): Promise<TenantKey> {
    const tenant = await this.store.getTenant(tenantId)
    if (tenant?.data_key) return tenantKey(await this.unwrap(tenantId, tenant.data_key))
    if (!tenant) throw new Error(`no tenant ${tenantId}`)
    // A tenant from before encryption at rest: give it a key now.
    const dataKey = newDataKey()
    const data_key = await this.wrap(tenantId, dataKey)
    await this.store.write({ ops: [{ op: 'tenant.put', tenant: { ...tenant, data_key } }] })
    return tenantKey(dataKey)
  }

  /** HMAC-SHA-256 of `value` under the tenant's key for `purpose` (fingerprints, search indexes). */
  async hmac(tenantId: string, purpose: string, value: string): Promise<string> {
    return keyedHash(await this.key(tenantId), purpose, value)
  }
}

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
  const { asRead, searchIndexPurpose } = options
  const keyOf = (tenantId: string): TenantKey | Promise<TenantKey> =>
    keyring.loaded(tenantId) ?? keyring.key(tenantId)

  /**
   * `data` and `mask` sealed together, in one ciphertext kept as `data`; `mask` is not stored apart.
   * Evaluated search indexes (`search_index_values`) are stored only as their keyed hashes.
   */
  const sealWith = (key: TenantKey, token: StoredToken): StoredToken => {
    const { mask, search_index_values: values } = token
    const fields = mask === undefined ? [token.data] : [token.data, mask]
    const data = { $sealed: sealValue(key, fields, aadOf(token.tenant_id, token.id)) }
    return withTokenFields(token, {
      data,
      mask: undefined,
      search_index_values: undefined,
      search_index_hashes:
        values === undefined
          ? token.search_index_hashes
          : values.map((value) => keyedHash(key, searchIndexPurpose, value)),
    })
  }
  const sealToken = (token: StoredToken): StoredToken | Promise<StoredToken> => {
    const key = keyOf(token.tenant_id)
    return key instanceof Promise ? key.then((k) => sealWith(k, token)) : sealWith(key, token)
  }

  /** `token` opened with `key`, as the caller reads it (`asRead`). */
  const openWith = (key: TenantKey, token: StoredToken): StoredToken => {
    // `mask` is sealed inside `data` and never stored apart: one beside sealed data was put there
    // by hand (a ciphertext moved into the mask, say) and is refused, not answered.
    if (token.mask !== undefined) throw unreadable(token.id)
    let fields: unknown
    try {
      fields = openValue(key, (token.data as Sealed).$sealed, aadOf(token.tenant_id, token.id))
    } catch {
      throw unreadable(token.id)
    }
    if (!Array.isArray(fields) || fields.length < 1 || fields.length > 2) throw unreadable(token.id)
    const full = withTokenFields(token, {
      data: fields[0] as Json,
      mask: fields.length === 2 ? (fields[1] as Json) : undefined,
    })
    return asRead(full)
  }
  const openToken = (token: StoredToken): StoredToken | Promise<StoredToken> => {
    // Legacy plaintext (written before encryption at rest) reads as it is.
    if (!isSealed(token.data)) return asRead(token)
    const key = keyOf(token.tenant_id)
    return key instanceof Promise ? key.then((k) => openWith(k, token)) : openWith(key, token)
  }
  /** A page's tokens, opened. */
  const openPage = (tokens: StoredToken[]) => Promise.all(tokens.map(openToken))

  const sealReactor = async (reactor: Reactor): Promise<Reactor> => {
    const key = await keyOf(reactor.tenant_id)
    const sealed = { $sealed: sealValue(key, reactor.configuration, reactorAad(reactor)) }
    return { ...reactor, configuration: sealed }
  }
  const openReactor = async (reactor: Reactor): Promise<Reactor> => {
    // Legacy plaintext (written before configurations were sealed) reads as it is.
    if (!isSealed(reactor.configuration)) return reactor
    let configuration: unknown
    try {
      configuration = openValue(
        await keyOf(reactor.tenant_id),
        reactor.configuration.$sealed,
        reactorAad(reactor),
      )
    } catch {
      throw unreadableReactor(reactor.id)
    }
    if (configuration === null || typeof configuration !== 'object' || Array.isArray(configuration)) {
      throw unreadableReactor(reactor.id)
    }
    return { ...reactor, configuration: configuration as Reactor['configuration'] }
  }

  const sealOps = (ops: Op[]): Promise<Op[]> => Promise.all(ops.map(sealOp))
  const sealOp = async (op: Op): Promise<Op> => {
    switch (op.op) {
      case 'token.put':
        return { ...op, token: await sealToken(op.token) }
      case 'staged.put': {
        const { token } = op.staged
        return token ? { ...op, staged: { ...op.staged, token: await sealToken(token) } } : op
      }
      case 'reactor.put':
        return { ...op, reactor: await sealReactor(op.reactor) }
      case 'idempotency.put': {
        const { record } = op
        if (record.answer === undefined) return op
        const key = await keyOf(record.tenant_id)
        return { ...op, record: { ...record, answer: sealValue(key, record.answer, answerAad(record)) } }
      }
      default:
        return op
    }
  }
  /** A staged record with its token opened (the record as stored when it stages a delete). */
  const openStaged = async (staged: StagedWrite): Promise<StagedWrite> =>
    staged.token ? { ...staged, token: await openToken(staged.token) } : staged

  // A transaction record holds nothing sealed: `transaction.unchanged` passes through.
  const sealCheck = async (check: Check): Promise<Check> => {
    if (check.check === 'reactor.unchanged') {
      const reactor = await sealedForGuard(check.reactor, openReactor, sealReactor, () =>
        inner.getReactor(check.tenant_id, check.id),
      )
      return { ...check, reactor }
    }
    if (check.check !== 'token.unchanged') return check
    const token = await sealedForGuard(check.token, openToken, sealToken, () =>
      inner.getToken(check.tenant_id, check.id),
    )
    return { ...check, token }
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

  return delegatingStore(inner, {
    async write(batch) {
      const ops = await sealOps(batch.ops)
      const checks = batch.checks ? await Promise.all(batch.checks.map(sealCheck)) : undefined
      return inner.write(checks ? { checks, ops } : { ops })
    },
    async getToken(tenantId, id) {
      const token = await inner.getToken(tenantId, id)
      return token && openToken(token)
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
      return Promise.all((await inner.getStaged(tenantId, transactionId, tokenIds)).map(openStaged))
    },
    async listStaged(tenantId, transactionId, query) {
      return Promise.all((await inner.listStaged(tenantId, transactionId, query)).map(openStaged))
    },
    async getReactor(tenantId, id) {
      const reactor = await inner.getReactor(tenantId, id)
      return reactor && openReactor(reactor)
    },
    async listReactors(tenantId, query) {
      const page = await inner.listReactors(tenantId, query)
      return { ...page, items: await Promise.all(page.items.map(openReactor)) }
    },
    async getIdempotency(tenantId, id) {
      const record = await inner.getIdempotency(tenantId, id)
      if (record?.answer === undefined) return record
      let answer: unknown
      try {
        answer = openValue(await keyOf(tenantId), record.answer, answerAad(record))
      } catch {
        answer = undefined
      }
      if (typeof answer !== 'string') {
        throw new ServiceError('unreadable', 'a stored idempotent answer fails its integrity check')
      }
      return { ...record, answer }
    },
  })
}

/** The tenant as shown to callers: without its wrapped data key. */
export function publicTenant(tenant: Tenant): Tenant {
  const { data_key: _key, ...shown } = tenant
  return shown
}
