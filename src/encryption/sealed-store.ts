import { ServiceError } from '../errors.js'
import type { Store } from '../store/contract.js'
import type { Check, Json, Op, StoredToken, StoredTransaction, Tenant } from '../types.js'
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

/** How a sealed token field is stored: the base64 of IV ‖ ciphertext ‖ GCM tag. */
type Sealed = { $sealed: string }

const isSealed = (value: unknown): value is Sealed =>
  typeof value === 'object' &&
  value !== null &&
  !Array.isArray(value) &&
  typeof (value as { $sealed?: unknown }).$sealed === 'string' &&
  Object.keys(value).length === 1

const aadOf = (tenantId: string, tokenId: string, field: 'data' | 'mask') =>
  `tokenvault:token:${tenantId}:${tokenId}:${field}`

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

  constructor(
    private readonly store: Store,
    private readonly providers: readonly KeyProvider[],
  ) {}

  /** A new data key for a tenant about to be created, wrapped for its record. */
  async newTenantKey(tenantId: string): Promise<WrappedDataKey> {
    const dataKey = newDataKey()
    const wrapped = await this.providers[0]!.wrap(dataKey, tenantId)
    this.cache.set(tenantId, Promise.resolve(tenantKey(dataKey)))
    return { key_id: this.providers[0]!.keyId, wrapped: Buffer.from(wrapped).toString('base64') }
  }

  /** The tenant's key, unwrapped (and made, for a tenant from before encryption at rest). */
  key(tenantId: string): Promise<TenantKey> {
    let key = this.cache.get(tenantId)
    if (!key) {
      key = this.load(tenantId)
      this.cache.set(tenantId, key)
      key.catch(() => this.cache.delete(tenantId))
    }
    return key
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

/**
 * `inner` with token `data` and `mask` encrypted on the way in and decrypted on the way out
 * (AES-256-GCM under the tenant's data key; tenant id, token id and field name are the additional
 * authenticated data, so a ciphertext moved to another token, field or tenant does not decrypt).
 * Everything else — ids, types, containers, metadata, timestamps — passes through in the clear.
 * Staged writes of transactions are sealed the same way. `dump()` answers records as stored
 * (sealed). Legacy plaintext values (written before encryption) read as they are.
 */
export function sealedStore(inner: Store, keyring: Keyring): Store {
  /** The stored (sealed) record each opened token came from, for `token.unchanged` checks. */
  const sealedOf = new WeakMap<StoredToken, StoredToken>()

  const sealToken = async (token: StoredToken): Promise<StoredToken> => {
    const key = await keyring.key(token.tenant_id)
    const sealed: StoredToken = {
      ...token,
      data: { $sealed: sealValue(key, token.data, aadOf(token.tenant_id, token.id, 'data')) },
    }
    if (token.mask !== undefined) {
      sealed.mask = { $sealed: sealValue(key, token.mask, aadOf(token.tenant_id, token.id, 'mask')) }
    }
    return sealed
  }

  const openToken = async (token: StoredToken): Promise<StoredToken> => {
    if (!isSealed(token.data) && !isSealed(token.mask)) return token
    const key = await keyring.key(token.tenant_id)
    const opened: StoredToken = { ...token }
    try {
      if (isSealed(token.data)) {
        opened.data = openValue(key, token.data.$sealed, aadOf(token.tenant_id, token.id, 'data')) as Json
      }
      if (isSealed(token.mask)) {
        opened.mask = openValue(key, token.mask.$sealed, aadOf(token.tenant_id, token.id, 'mask')) as Json
      }
    } catch {
      throw unreadable(token.id)
    }
    sealedOf.set(opened, token)
    return opened
  }

  const sealOps = (ops: Op[]): Promise<Op[]> => Promise.all(ops.map(sealOp))
  const sealOp = async (op: Op): Promise<Op> => {
    switch (op.op) {
      case 'token.put':
        return { ...op, token: await sealToken(op.token) }
      case 'transaction.stage':
        return { ...op, writes: await sealOps(op.writes) }
      case 'transaction.put':
        return { ...op, transaction: { ...op.transaction, writes: await sealOps(op.transaction.writes) } }
      default:
        return op
    }
  }
  const openOps = (ops: Op[]): Promise<Op[]> =>
    Promise.all(
      ops.map(async (op) => (op.op === 'token.put' ? { ...op, token: await openToken(op.token) } : op)),
    )

  const sealCheck = async (check: Check): Promise<Check> => {
    if (check.check !== 'token.unchanged') return check
    const known = sealedOf.get(check.token)
    if (known) return { ...check, token: known }
    // Not a token this store answered: compare it with the stored one opened, and check against that.
    const stored = await inner.getToken(check.tenant_id, check.id)
    if (stored && JSON.stringify(await openToken(stored)) === JSON.stringify(check.token)) {
      return { ...check, token: stored }
    }
    return { ...check, token: await sealToken(check.token) }
  }

  const openTransaction = async (tx: StoredTransaction | null) =>
    tx && tx.writes.length ? { ...tx, writes: await openOps(tx.writes) } : tx

  return {
    ...inner,
    async write(batch) {
      const ops = await sealOps(batch.ops)
      const checks = batch.checks ? await Promise.all(batch.checks.map(sealCheck)) : undefined
      return inner.write(checks ? { checks, ops } : { ops })
    },
    async getToken(tenantId, id) {
      const token = await inner.getToken(tenantId, id)
      return token && openToken(token)
    },
    async listChildren(tenantId, parentId, query) {
      const page = await inner.listChildren(tenantId, parentId, query)
      return { ...page, items: await Promise.all(page.items.map(openToken)) }
    },
    getTransaction: async (tenantId, id) => openTransaction(await inner.getTransaction(tenantId, id)),
    async getTenant(id) {
      return inner.getTenant(id)
    },
  }
}

/** The tenant as shown to callers: without its wrapped data key. */
export function publicTenant(tenant: Tenant): Tenant {
  const { data_key: _key, ...shown } = tenant
  return shown
}
