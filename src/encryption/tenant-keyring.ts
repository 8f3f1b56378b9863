import type { KeyObject } from 'node:crypto'
import type { Clock, DataKeyVersion, Tenant, TenantKeys } from '../kernel/index.js'
import { conflict, ServiceError } from '../kernel/index.js'
import type { Store } from '../store/index.js'
import {
  encryptionKeyOf,
  hmacKeysOf,
  type KeyProvider,
  keyedHash,
  newDataKey,
  type TenantKey,
  type WrappedDataKey,
} from './keyring.js'

/** When a tenant's data key rotates by itself, and how its seals are counted. */
export interface DataKeyPolicy {
  /**
   * Seals one data-key version makes at most: the seal that reaches it is the version's last, and
   * the tenant rotates before its next. Below the NIST SP 800-38D bound of 2³² random-IV
   * AES-GCM encryptions per key (HashiCorp Vault's default: 3 865 470 566).
   * @default 3_865_470_566
   */
  maxSeals: number
  /**
   * Seals a process reserves at once (one compare-and-set of the tenant record): a crash loses
   * at most this many unused reservations (the re-encryption sweep's, what its pass has left, up
   * to 65 536: `REKEY_RESERVE_MAX`); the count never goes back.
   * @default 1024
   */
  sealBlock: number
  /** A version older than this (ms, on the service clock) rotates before its next seal. @default off */
  maxAgeMs?: number | undefined
  /**
   * How long (ms, on the service clock) a process trusts the tenant's keys it read: past it, it
   * reads the record again before its next use (so it sees another process's rotation or
   * destruction). The re-encryption sweep retires old versions only after twice this.
   * @default 15_000
   */
  refreshMs: number
}

/** The default policy (see `DataKeyPolicy`). */
export const DEFAULT_DATA_KEY_POLICY: DataKeyPolicy = {
  maxSeals: 3_865_470_566,
  sealBlock: 1024,
  refreshMs: 15_000,
}

/** A tenant's keys as this process holds them: the record read, the keys, its seal reservation. */
interface Held {
  tenant: Tenant
  key: TenantKey
  /** Seal numbers reserved under `key.version`: `next` is the count taken so far, `end` the limit. */
  next: number
  end: number
  loadedAt: number
}

/** The wrapping context of a data-key version: bound to tenant and version, so none moves. */
const versionContext = (tenantId: string, version: number) => `${tenantId}/data-key/v${version}`

/** A tenant's keys record; a tenant from before versioned keys has version 1 = its root key. */
export function keysOf(tenant: Tenant): TenantKeys {
  return (
    tenant.keys ?? {
      current: 1,
      versions: [{ version: 1, root: true, created_at: tenant.created_at }],
      sealed: 0,
      rotated_at: tenant.created_at,
    }
  )
}

/**
 * Moves what is left of `before`'s seal reservation to `after` (the same tenant's keys read again)
 * when both have the same version current: those seals were reserved by this process under that
 * version, so they stay its own, and reading the record again every `refreshMs` loses none of
 * them. `before` keeps none, so no seal is counted twice.
 */
function carryReservation(before: Held | undefined, after: Held): void {
  if (!before || before.next >= before.end || before.key.version !== after.key.version) return
  after.next = before.next
  after.end = before.end
  before.end = before.next
}

/** Whether two keys records hold the same versions with the same one current. */
const sameKeys = (a: TenantKeys, b: TenantKeys) =>
  a.current === b.current && JSON.stringify(a.versions) === JSON.stringify(b.versions)

/** The error every use of a destroyed tenant's keys answers. */
export const destroyedKeys = (tenantId: string) =>
  new ServiceError('unreadable', `tenant ${tenantId}'s data keys were destroyed: its data can't be read`)

/**
 * The tenants' data keys. Each tenant has a root key (`data_key`, for keyed hashes) and data-key
 * versions (`keys`), all wrapped by the master key and stored on the tenant record; every change to
 * them is a compare-and-set (`tenant.unchanged`), so processes sharing a store agree. `providers[0]`
 * wraps new keys; every provider given can unwrap (old and new master keys both read during a
 * rotation). Unwrapped keys are kept for `policy.refreshMs`, then read again.
 */
export class Keyring {
  /** Reads of tenants' records in flight. */
  private readonly loading = new Map<string, Promise<Held>>()
  /** The keys once unwrapped, for the hot path (no promise to await). */
  private readonly ready = new Map<string, Held>()
  /** One reservation or rotation of a tenant at a time in this process. */
  private readonly busy = new Map<string, Promise<unknown>>()
  private readonly policy: DataKeyPolicy

  constructor(
    private readonly store: Store,
    private readonly providers: readonly KeyProvider[],
    private readonly clock: Clock = { now: () => new Date() },
    policy: Partial<DataKeyPolicy> = {},
  ) {
    this.policy = { ...DEFAULT_DATA_KEY_POLICY, ...policy }
  }

  private nowMs(): number {
    return this.clock.now().getTime()
  }

  private nowIso(): string {
    return this.clock.now().toISOString()
  }

  /** A root key for a tenant about to be created, wrapped for its record (no versions: version 1 is the root). */
  async newTenantKey(tenantId: string): Promise<WrappedDataKey> {
    return this.wrap(tenantId, newDataKey())
  }

  /** The keys of a tenant about to be created: a root key and data-key version 1, both wrapped. */
  async newTenantKeys(tenantId: string, at: string): Promise<Required<Pick<Tenant, 'data_key' | 'keys'>>> {
    const data_key = await this.wrap(tenantId, newDataKey())
    const v1 = await this.wrapVersion(tenantId, 1, at, newDataKey())
    return { data_key, keys: { current: 1, versions: [v1], sealed: 0, rotated_at: at } }
  }

  private async wrapVersion(
    tenantId: string,
    version: number,
    at: string,
    dataKey: Uint8Array,
  ): Promise<DataKeyVersion> {
    const wrapped = await this.providers[0]!.wrap(dataKey, versionContext(tenantId, version))
    return {
      version,
      created_at: at,
      key_id: this.providers[0]!.keyId,
      wrapped: Buffer.from(wrapped).toString('base64'),
    }
  }

  /** The tenant's keys, unwrapped: all versions it holds (read again when `version` is not among them). */
  async key(tenantId: string, version?: number): Promise<TenantKey> {
    let held = await this.held(tenantId)
    if (version !== undefined && !held.key.encryptionFor(version)) held = await this.reload(tenantId)
    return held.key
  }

  /** The tenant's keys if already unwrapped and fresh (then no await is needed), else undefined. */
  loaded(tenantId: string): TenantKey | undefined {
    return this.fresh(tenantId)?.key
  }

  /** The keys that open `version` of the tenant's ciphertexts: at once when held and fresh. */
  keyFor(tenantId: string, version?: number): TenantKey | Promise<TenantKey> {
    const held = this.fresh(tenantId)
    if (held && (version === undefined || held.key.encryptionFor(version))) return held.key
    return this.key(tenantId, version)
  }

  private fresh(tenantId: string): Held | undefined {
    const held = this.ready.get(tenantId)
    if (!held) return undefined
    return this.nowMs() - held.loadedAt < this.policy.refreshMs ? held : undefined
  }

  private held(tenantId: string): Promise<Held> {
    const ready = this.fresh(tenantId)
    if (ready) return Promise.resolve(ready)
    return this.loading.get(tenantId) ?? this.reload(tenantId)
  }

  /** Reads the tenant's record again and unwraps its keys. */
  private reload(tenantId: string): Promise<Held> {
    const loading = this.load(tenantId)
    this.loading.set(tenantId, loading)
    const done = () => {
      if (this.loading.get(tenantId) === loading) this.loading.delete(tenantId)
    }
    loading.then(
      (held) => {
        if (this.loading.get(tenantId) === loading) {
          carryReservation(this.ready.get(tenantId), held)
          this.ready.set(tenantId, held)
        }
        done()
      },
      () => {
        if (this.loading.get(tenantId) === loading) this.ready.delete(tenantId)
        done()
      },
    )
    return loading
  }

  /** Forgets what this process holds of the tenant's keys (or of every tenant's, after a clear). */
  forget(tenantId?: string): void {
    if (tenantId === undefined) {
      this.loading.clear()
      this.ready.clear()
      return
    }
    this.loading.delete(tenantId)
    this.ready.delete(tenantId)
  }

  private async load(tenantId: string): Promise<Held> {
    const loadedAt = this.nowMs()
    const tenant = await this.store.getTenant(tenantId)
    if (!tenant) throw new Error(`no tenant ${tenantId}`)
    if (tenant.keys?.destroyed_at !== undefined) throw destroyedKeys(tenantId)
    if (!tenant.data_key) {
      // A tenant from before encryption at rest: give it keys now (only if nobody did meanwhile).
      const made = { ...tenant, ...(await this.newTenantKeys(tenantId, this.nowIso())) }
      await this.compareAndSet(tenant, made)
      return this.load(tenantId)
    }
    return { tenant, key: await this.unwrapAll(tenant), next: 0, end: 0, loadedAt }
  }

  /** Every key of a tenant record, unwrapped: its root (hashes) and its data-key versions. */
  private async unwrapAll(tenant: Tenant): Promise<TenantKey> {
    const root = await this.unwrap(tenant.id, tenant.data_key!)
    const keys = keysOf(tenant)
    const byVersion = new Map<number, KeyObject>()
    for (const v of keys.versions) {
      const material = v.root ? root : await this.unwrapVersion(tenant.id, v)
      byVersion.set(v.version, encryptionKeyOf(material))
    }
    const encryption = byVersion.get(keys.current)
    if (!encryption)
      throw new Error(`tenant ${tenant.id}: its current data-key version ${keys.current} is not held`)
    return {
      version: keys.current,
      encryption,
      encryptionFor: (version) => byVersion.get(version),
      hmacKey: hmacKeysOf(root),
    }
  }

  /** Unwraps one data-key version with the provider it names. */
  async unwrapVersion(tenantId: string, v: DataKeyVersion): Promise<Uint8Array> {
    return this.unwrapWith(
      `tenant ${tenantId}'s data key version ${v.version}`,
      versionContext(tenantId, v.version),
      { key_id: v.key_id ?? '', wrapped: v.wrapped ?? '' },
    )
  }

  /** Unwraps `wrapped` (a root key) for `tenantId` with the provider it names. Throws a clear error on a wrong key. */
  async unwrap(tenantId: string, wrapped: WrappedDataKey): Promise<Uint8Array> {
    return this.unwrapWith(`tenant ${tenantId}'s data key`, tenantId, wrapped)
  }

  private async unwrapWith(what: string, context: string, wrapped: WrappedDataKey): Promise<Uint8Array> {
    const provider = this.providers.find((p) => p.keyId === wrapped.key_id)
    if (!provider) {
      throw new Error(
        `masterKey: ${what} is wrapped by master key ${wrapped.key_id}, which this service was not given (it has ${this.providers.map((p) => p.keyId).join(', ')})`,
      )
    }
    try {
      return await provider.unwrap(Buffer.from(wrapped.wrapped, 'base64'), context)
    } catch {
      throw new Error(`masterKey: master key ${wrapped.key_id} could not unwrap ${what}`)
    }
  }

  /** Wraps `dataKey` (a root key) for `tenantId` with the current master key. */
  async wrap(tenantId: string, dataKey: Uint8Array): Promise<WrappedDataKey> {
    const wrapped = await this.providers[0]!.wrap(dataKey, tenantId)
    return { key_id: this.providers[0]!.keyId, wrapped: Buffer.from(wrapped).toString('base64') }
  }

  /** `tenant` with its root and every version wrapped again by the current master key. */
  async rewrapped(tenant: Tenant): Promise<Tenant> {
    if (!tenant.data_key) return tenant
    const data_key = await this.wrap(tenant.id, await this.unwrap(tenant.id, tenant.data_key))
    if (!tenant.keys) return { ...tenant, data_key }
    const versions: DataKeyVersion[] = []
    for (const v of tenant.keys.versions) {
      versions.push(
        v.root
          ? v
          : await this.wrapVersion(
              tenant.id,
              v.version,
              v.created_at,
              await this.unwrapVersion(tenant.id, v),
            ),
      )
    }
    return { ...tenant, data_key, keys: { ...tenant.keys, versions } }
  }

  /** Puts `next` in place of `read` if the record is still `read`; answers whether it did. */
  async compareAndSet(read: Tenant, next: Tenant, deferSync = false): Promise<boolean> {
    const result = await this.store.write({
      checks: [{ check: 'tenant.unchanged', tenant_id: read.id, tenant: read }],
      ops: [{ op: 'tenant.put', tenant: next }],
      ...(deferSync ? { deferSync } : {}),
    })
    return result.ok
  }

  /**
   * Changes the tenant's keys record with `change` (given the record as read, answering the new
   * one, or null to leave it), under `tenant.unchanged`, again on a conflict; then holds the keys
   * of the record written. Answers the record written (or read, when `change` left it).
   * `deferSync`: only for a change a power loss may undo harmlessly (see `Store.write`).
   */
  async update(
    tenantId: string,
    change: (tenant: Tenant, keys: TenantKeys) => Promise<Tenant | null>,
    deferSync = false,
  ): Promise<Tenant> {
    for (let attempt = 0; attempt < 64; attempt++) {
      const tenant = await this.store.getTenant(tenantId)
      if (!tenant) throw new ServiceError('not_found', 'tenant not found')
      if (tenant.keys?.destroyed_at !== undefined) throw destroyedKeys(tenantId)
      const next = await change(tenant, keysOf(tenant))
      if (next === null) return tenant
      if (await this.compareAndSet(tenant, next, deferSync)) {
        const held = this.ready.get(tenantId)
        // Only the sweep's place changed: the keys held (and their seal reservation) stay good.
        if (held && sameKeys(keysOf(held.tenant), keysOf(next))) held.tenant = next
        else this.forget(tenantId)
        return next
      }
    }
    throw conflict(`tenant ${tenantId}'s keys changed too often to update them`)
  }

  /** HMAC-SHA-256 of `value` under the tenant's key for `purpose` (fingerprints, search indexes). */
  async hmac(tenantId: string, purpose: string, value: string | readonly string[]): Promise<string> {
    const held = this.fresh(tenantId)
    return keyedHash(held ? held.key : await this.key(tenantId), purpose, value)
  }

  /**
   * The key to seal one value under, with that seal counted: at once while this process holds a
   * reservation under the current version, else after reserving a block (rotating first when the
   * version is spent or too old). The seal that reaches `maxSeals` answers after the rotation.
   */
  sealKey(tenantId: string): TenantKey | Promise<TenantKey> {
    const held = this.fresh(tenantId)
    if (held && held.next < held.end && !this.aged(held)) return this.take(held)
    return this.reserveThenSeal(tenantId)
  }

  private take(held: Held): TenantKey | Promise<TenantKey> {
    held.next++
    if (held.next < this.policy.maxSeals) return held.key
    // The version's last seal: it is made under it, and the tenant rotates before the next.
    const key = held.key
    return this.serially(held.tenant.id, () => this.rotateIfCurrent(held.tenant.id, key.version)).then(
      () => key,
    )
  }

  private aged(held: Held): boolean {
    const maxAge = this.policy.maxAgeMs
    if (maxAge === undefined) return false
    return this.nowMs() - Date.parse(keysOf(held.tenant).rotated_at) >= maxAge
  }

  /**
   * Makes this process hold at least `count` seals of the tenant's current version (at most
   * `maxSeals` less those counted), reserving them in one block when it holds fewer: for work that
   * knows how many seals it is about to make (the re-encryption sweep), one synced write of the
   * tenant record instead of one every `sealBlock` seals. A crash loses the unused part.
   */
  async reserveSeals(tenantId: string, count: number): Promise<void> {
    await this.serially(tenantId, () => this.reserve(tenantId, Math.max(1, Math.floor(count))))
  }

  private async reserveThenSeal(tenantId: string): Promise<TenantKey> {
    for (let attempt = 0; attempt < 64; attempt++) {
      const held = await this.serially(tenantId, () => this.reserve(tenantId))
      if (held && held.next < held.end && !this.aged(held)) return this.take(held)
    }
    throw conflict(`tenant ${tenantId}: no seal could be reserved`)
  }

  /** Runs `work` after this process's other reservation or rotation of the tenant. */
  private serially<T>(tenantId: string, work: () => Promise<T>): Promise<T> {
    const before = this.busy.get(tenantId) ?? Promise.resolve()
    const run = before.then(work, work)
    const settled = run.then(
      () => undefined,
      () => undefined,
    )
    this.busy.set(tenantId, settled)
    void settled.then(() => {
      if (this.busy.get(tenantId) === settled) this.busy.delete(tenantId)
    })
    return run
  }

  /**
   * Reserves a block of seals under the current version (rotating first when it is spent or too
   * old); answers the keys with the reservation, or undefined when it must be tried again.
   */
  private async reserve(tenantId: string, want = 1): Promise<Held | undefined> {
    const ready = this.fresh(tenantId)
    if (ready && ready.end - ready.next >= want && !this.aged(ready)) return ready
    const held = await this.reload(tenantId)
    if (held.end - held.next >= want && !this.aged(held)) return held
    const keys = keysOf(held.tenant)
    if (keys.sealed >= this.policy.maxSeals || this.aged(held)) {
      await this.rotateIfCurrent(tenantId, keys.current)
      return undefined
    }
    const grant = Math.min(Math.max(this.policy.sealBlock, want), this.policy.maxSeals - keys.sealed)
    const next: Tenant = { ...held.tenant, keys: { ...keys, sealed: keys.sealed + grant } }
    if (!(await this.compareAndSet(held.tenant, next))) return undefined
    const reserved = { ...held, tenant: next, next: keys.sealed, end: keys.sealed + grant }
    this.ready.set(tenantId, reserved)
    return reserved
  }

  /** Rotates when `version` is still current (another process may have rotated it already). */
  private async rotateIfCurrent(tenantId: string, version: number): Promise<void> {
    await this.rotate(tenantId, version)
  }

  /**
   * Makes a new data-key version current (when `expected` is given: only if `expected` is still
   * current). Answers the current version after it.
   */
  async rotate(tenantId: string, expected?: number): Promise<number> {
    const at = this.nowIso()
    const written = await this.update(tenantId, async (tenant, keys) => {
      if (expected !== undefined && keys.current !== expected) return null
      const version = Math.max(keys.current, ...keys.versions.map((v) => v.version)) + 1
      const made = await this.wrapVersion(tenantId, version, at, newDataKey())
      return {
        ...tenant,
        keys: { ...keys, current: version, versions: [...keys.versions, made], sealed: 0, rotated_at: at },
      }
    })
    return keysOf(written).current
  }

  /**
   * Destroys the tenant's keys (crypto-shredding): its root and every version leave its record,
   * which keeps only `destroyed_at`; from then on nothing of the tenant decrypts here, and, past
   * `refreshMs`, in no other process either.
   */
  async destroy(tenantId: string): Promise<void> {
    const at = this.nowIso()
    for (let attempt = 0; attempt < 64; attempt++) {
      const tenant = await this.store.getTenant(tenantId)
      if (!tenant) throw new ServiceError('not_found', 'tenant not found')
      if (tenant.keys?.destroyed_at !== undefined) break
      const { data_key: _root, keys: _keys, ...rest } = tenant
      const next: Tenant = {
        ...rest,
        keys: { current: 0, versions: [], sealed: 0, rotated_at: at, destroyed_at: at },
      }
      if (await this.compareAndSet(tenant, next)) break
    }
    this.forget(tenantId)
  }

  /** The store the keys are kept in, as stored (records sealed): what the re-encryption sweep reads. */
  get storeAsStored(): Store {
    return this.store
  }

  /** The policy this keyring applies. */
  get rules(): DataKeyPolicy {
    return this.policy
  }
}
