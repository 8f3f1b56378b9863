import {
  type DataKeyPolicy,
  keysOf,
  type MasterKey,
  type RekeyProgress,
  rekeyStep,
  toProvider,
} from '../encryption/index.js'
import type { Tenant } from '../kernel/index.js'
import { backgroundTurn, invalid, notFound, pacedTurn } from '../kernel/index.js'
import { deleteTenants } from '../lifecycle/index.js'
import { SEARCH_INDEX_PURPOSE } from '../search/index.js'
import type { Wiring } from './wiring.js'

/** A tenant's data keys as the operator sees them: versions and counts, never key material. */
export interface DataKeyStatus {
  tenantId: string
  /** The version new seals use (0 once destroyed). */
  current: number
  /** The versions held, oldest first, with when each was made. */
  versions: { version: number; created_at: string }[]
  /** Seals reserved under the current version (never fewer than made). */
  sealed: number
  /** When the current version became current. */
  rotated_at: string
  /** The re-encryption sweep's place, while one is under way. */
  sweep?: { to: number; after?: string; done: number; started_at: string }
  destroyed_at?: string
  /** The policy: seals per version, and the cryptoperiod (ms) when one is set. */
  maxSeals: number
  maxAgeMs?: number
}

/** The data-key lifecycle of the operator API (see `Admin`). */
export interface KeyAdmin {
  /** Makes a new data-key version of the tenant current: new seals use it; older ones still read. */
  rotateDataKey(input: { tenantId: string }): Promise<DataKeyStatus>
  /** The tenant's data-key versions, seal count and sweep place. */
  dataKeyStatus(input: { tenantId: string }): Promise<DataKeyStatus>
  /**
   * One bounded step of the online re-encryption sweep (`batchSize` tokens, default 500, at most
   * 10 000): re-seals records of older versions under the current one, guarded, and moves the
   * sweep's place; at the end of a pass retires the older versions (see `RekeyProgress`).
   */
  reencryptStep(input: ReencryptInput): Promise<RekeyProgress>
  /**
   * Runs `reencryptStep` until the sweep finishes or must wait (`retireAt`), calling `onProgress`
   * after each step. Resumable: a sweep cut short continues from its stored place.
   */
  reencrypt(
    input: ReencryptInput & { onProgress?: (progress: RekeyProgress) => void },
  ): Promise<RekeyProgress>
  /**
   * Crypto-shredding: destroys the tenant's root key and every data-key version (they leave its
   * record), so none of its ciphertexts — in the store, in files, in dead rows — decrypts again.
   * Its records stay (ids, metadata in the clear) until deleted.
   */
  destroyTenantKeys(input: { tenantId: string }): Promise<void>
  /** Deletes a tenant: destroys its keys first, then deletes every record of it. */
  deleteTenant(input: { tenantId: string }): Promise<void>
  /**
   * Makes `next` the master key: every tenant's root key and data-key versions are unwrapped and
   * wrapped again by `next` (token ciphertexts are not touched). The service reads with the old
   * and the new key meanwhile; afterwards a service given only `next` reads everything.
   */
  rotateMasterKey(next: MasterKey): Promise<{ tenants: number; keyId: string }>
  /**
   * Checks that the service's master keys unwrap every tenant's root key and data-key versions;
   * throws an error naming the key that is missing or wrong (never the key material).
   */
  verifyMasterKey(): Promise<void>
}

/** What a re-encryption sweep is asked: whose, how many tokens a guarded write, and its share of the time. */
export interface ReencryptInput {
  tenantId: string
  /** Tokens re-sealed per guarded write, 1 to 10 000. @default 500 */
  batchSize?: number
  /**
   * The most of the process's time the sweep takes while the service's calls come, above 0 and at
   * most 1: after each of its bounded steps during which a call began, it pauses so that its steps
   * take no more than this share of the time (the service's `pacer`), and other tenants' calls
   * meet one of its steps that much less often. With no call coming it runs at full speed. 1: a
   * step in every turn of the event loop with no call in flight, whatever comes.
   * @default 0.1
   */
  share?: number
}

/** The sweep's share of the time when the caller names none (see `ReencryptInput.share`). */
export const DEFAULT_REENCRYPT_SHARE = 0.1

/** `input.share`, checked: a number above 0 and at most 1 (the default when absent). */
function shareOf(input: { share?: unknown }): number {
  const share = input.share ?? DEFAULT_REENCRYPT_SHARE
  if (typeof share !== 'number' || !(share > 0 && share <= 1))
    throw invalid('share', 'must be a number above 0 and at most 1')
  return share
}

const tenantIdOf = (input: { tenantId?: unknown } | undefined): string => {
  const id = input?.tenantId
  if (typeof id !== 'string' || id === '') throw invalid('tenantId', 'must be a tenant id')
  return id
}

/** The status of a tenant record's keys. */
function statusOf(tenant: Tenant, policy: DataKeyPolicy): DataKeyStatus {
  const keys = keysOf(tenant)
  return {
    tenantId: tenant.id,
    current: keys.current,
    versions: keys.versions.map((v) => ({ version: v.version, created_at: v.created_at })),
    sealed: keys.sealed,
    rotated_at: keys.rotated_at,
    ...(keys.sweep ? { sweep: keys.sweep } : {}),
    ...(keys.destroyed_at ? { destroyed_at: keys.destroyed_at } : {}),
    maxSeals: policy.maxSeals,
    ...(policy.maxAgeMs !== undefined ? { maxAgeMs: policy.maxAgeMs } : {}),
  }
}

/** Wraps every tenant's keys again under `next`, which becomes the first master key. */
async function rotateMasterKey(w: Wiring, next: MasterKey) {
  const provider = toProvider(next)
  w.keys.unshift(provider)
  let rotated = 0
  for (const tenant of await w.store.listTenants()) {
    if (!tenant.data_key) continue
    const wrappedBy = [tenant.data_key.key_id, ...keysOf(tenant).versions.flatMap((v) => v.key_id ?? [])]
    if (wrappedBy.every((id) => id === provider.keyId)) continue
    await w.keyring.update(tenant.id, async (t) => w.keyring.rewrapped(t))
    rotated++
  }
  return { tenants: rotated, keyId: provider.keyId }
}

/** The data-key lifecycle operations over the wired service. */
export function keyAdmin(w: Wiring): KeyAdmin {
  const status = async (tenantId: string) => {
    const tenant = await w.store.getTenant(tenantId)
    if (!tenant) throw notFound('tenant')
    return statusOf(tenant, w.keyring.rules)
  }
  /** A sweep's turn: it yields to the service's calls in flight (a bounded number of turns), paced to `share`. */
  const turnOf = (share: number) =>
    pacedTurn(
      () => backgroundTurn(w.calls),
      w.pacer,
      share,
      () => w.calls.begun,
    )
  const deps = (turn: () => Promise<void>) => ({
    store: w.keyring.storeAsStored,
    keyring: w.keyring,
    now: w.now,
    turn,
    sealing: {
      keyOf: (tenantId: string, version?: number) => w.keyring.keyFor(tenantId, version),
      sealKeyOf: (tenantId: string) => w.keyring.sealKey(tenantId),
      searchIndexPurpose: SEARCH_INDEX_PURPOSE,
      asRead: <T>(token: T) => token,
    },
  })
  /** One step of the sweep, journaled; `turn` is the run's paced turn (its pauses span its steps). */
  const step = (input: ReencryptInput, turn: () => Promise<void>) =>
    w.adminCall(
      'key.reencrypt',
      () => tenantIdOf(input),
      () => rekeyStep(deps(turn), tenantIdOf(input), input.batchSize ?? 500),
    )
  const admin: KeyAdmin = {
    rotateDataKey: (input) =>
      w.adminCall(
        'key.rotate',
        () => tenantIdOf(input),
        async () => {
          const tenantId = tenantIdOf(input)
          await w.keyring.rotate(tenantId)
          return status(tenantId)
        },
      ),
    dataKeyStatus: async (input) => status(tenantIdOf(input)),
    reencryptStep: async (input) => step(input, turnOf(shareOf(input ?? {}))),
    async reencrypt(input) {
      const turn = turnOf(shareOf(input ?? {}))
      for (;;) {
        const progress = await step(input, turn)
        input.onProgress?.(progress)
        if (progress.finished) return progress
        if (progress.retireAt !== undefined && w.now() < progress.retireAt) return progress
      }
    },
    destroyTenantKeys: (input) =>
      w.adminCall(
        'key.destroy',
        () => tenantIdOf(input),
        async () => {
          const tenantId = tenantIdOf(input)
          if (!(await w.store.getTenant(tenantId))) throw notFound('tenant')
          await w.keyring.destroy(tenantId)
        },
      ),
    deleteTenant: (input) =>
      w.adminCall(
        'tenant.delete',
        () => tenantIdOf(input),
        async () => {
          const tenantId = tenantIdOf(input)
          if (!(await w.store.getTenant(tenantId))) throw notFound('tenant')
          // Keys first: should the deletes below stop halfway, what is left is unreadable already.
          await w.keyring.destroy(tenantId)
          await deleteTenants(w.store, [tenantId])
        },
      ),
    rotateMasterKey: (next) => rotateMasterKey(w, next),
    async verifyMasterKey() {
      for (const tenant of await w.store.listTenants()) {
        if (tenant.keys?.destroyed_at !== undefined || !tenant.data_key) continue
        await w.keyring.unwrap(tenant.id, tenant.data_key)
        for (const v of keysOf(tenant).versions) if (!v.root) await w.keyring.unwrapVersion(tenant.id, v)
      }
    },
  }
  return admin
}
