import { existsSync } from 'node:fs'
import { createService, systemClock } from '../entry/index.js'
import { PERMISSIONS_BY_TYPE } from '../src/applications/index.js'
import type { RekeyProgress } from '../src/encryption/index.js'
import type { Store } from '../src/store/index.js'
import { readKeyFile, writeNewKeyFile } from './master-key.js'
import { describeStore } from './store-errors.js'
import { lockOutServers, openStore } from './stores.js'

/** Options of `createManagementKey` (`tokenvault keys create`). */
export interface KeysCreateOptions {
  /** A `--store` value. */
  store: string
  masterKey?: Uint8Array
  /** The tenant the key is for; default: the store's only tenant. */
  tenant?: string
  /** A key to use instead of a random one (`key_` + 24 or more of A-Z a-z 0-9 _ -). */
  key?: string
}

/**
 * Mints a new management key for an existing store (one whose key was lost): a management
 * application with every management permission in `tenant` (or the store's only tenant). Checks
 * the master key first. A file store another process holds is refused by its lock.
 */
export async function createManagementKey(
  options: KeysCreateOptions,
): Promise<{ tenantId: string; applicationId: string; key: string }> {
  const opened = await openStore(options.store)
  const service = createService({
    store: opened.store,
    clock: systemClock,
    runner: null,
    ...(options.masterKey ? { masterKey: options.masterKey } : {}),
  })
  try {
    await service.admin.verifyMasterKey()
    const tenants = await opened.store.listTenants()
    let tenantId = options.tenant
    if (tenantId === undefined) {
      if (tenants.length !== 1) {
        throw new Error(
          `--tenant is needed: the store holds ${tenants.length} tenants${tenants.length ? ` (${tenants.map((t) => t.id).join(', ')})` : ''}`,
        )
      }
      tenantId = tenants[0]!.id
    } else if (!tenants.some((t) => t.id === tenantId)) {
      throw new Error(`--tenant: the store holds no tenant ${tenantId}`)
    }
    const { application, key } = await service.admin.createApplication({
      tenantId,
      name: 'management (keys create)',
      type: 'management',
      permissions: [...PERMISSIONS_BY_TYPE.management],
      ...(options.key ? { key: options.key } : {}),
    })
    return { tenantId, applicationId: application.id, key }
  } finally {
    await service.close()
    await opened.release()
  }
}

/** Options of `rotateMasterKeyFile` (`tokenvault keys rotate-master`). */
export interface RotateMasterOptions {
  /** A `--store` value (a file or PostgreSQL store). */
  store: string
  /** The key the store is sealed under now. */
  masterKey: Uint8Array
  /**
   * Where the new key is: a file that exists already holds it (a rotation cut short is resumed with
   * it); otherwise a new random key is written there (base64, 0600) before anything is re-wrapped.
   */
  newKeyFile: string
}

/**
 * Re-wraps every tenant's data key of a store under a new master key (token ciphertexts are not
 * touched), then checks that the new key alone opens every tenant. Tenants already under the new
 * key are skipped, so running it again after a failure finishes the rotation. Servers on the
 * store must be stopped first (a file store another process holds is refused by its lock).
 */
export async function rotateMasterKeyFile(
  options: RotateMasterOptions,
): Promise<{ tenants: number; keyId: string; created: boolean }> {
  if (options.store === 'memory') throw new Error('a memory store has no master key to rotate')
  const created = !existsSync(options.newKeyFile)
  const next = created ? writeNewKeyFile(options.newKeyFile) : readKeyFile(options.newKeyFile)
  const rotated = await withService(options.store, [options.masterKey, next], async (service) => {
    await service.admin.verifyMasterKey()
    return service.admin.rotateMasterKey(next)
  })
  await withService(options.store, [next], (service) => service.admin.verifyMasterKey())
  return { tenants: rotated.tenants, keyId: rotated.keyId, created }
}

/**
 * Throws when another process has the store `spec` open (a file store) or serves it (PostgreSQL: a
 * server holds `SERVING_LOCK`, which this takes until the function it answers is called, so no
 * server starts meanwhile): a server keeps the data keys it unwrapped, and seals what it writes
 * next (a new tenant's keys) under the old master key, which the rotation then retires. On a file
 * store nothing keeps a server from opening the directory meanwhile (no lock a process can take on
 * LMDB's lock file from Node): the function it answers names one that did to `warn`.
 */
export async function storeStopped(spec: string, warn: (line: string) => void): Promise<() => Promise<void>> {
  const stop = 'stop every server on it, then rotate (a running server would go on sealing under the old key)'
  if (spec.startsWith('file:')) {
    const { openedElsewhere } = await import('../adapters/file/header.js')
    const dir = spec.slice('file:'.length)
    const pids = openedElsewhere(dir)
    if (pids.length > 0) throw new Error(`the store ${spec} is open in process ${pids.join(', ')}: ${stop}`)
    return async () => {
      const late = openedElsewhere(dir)
      if (late.length > 0)
        warn(
          `process ${late.join(', ')} opened ${spec} during the rotation: restart it with the new master key`,
        )
    }
  }
  const locked = await lockOutServers(spec).catch((error: unknown) => {
    throw new Error(
      `${describeStore(spec)} can't be reached: ${error instanceof Error ? error.message : String(error)}`,
    )
  })
  if (typeof locked === 'function') return locked
  throw new Error(`${describeStore(spec)} is served by ${locked.holders} server(s): ${stop}`)
}

/** Runs `work` on a service over the store `spec` names, without a formula runner, then closes both. */
async function withService<T>(
  spec: string,
  masterKey: Uint8Array[],
  work: (service: ReturnType<typeof createService>) => Promise<T>,
): Promise<T> {
  const opened = await openStore(spec)
  const service = createService({ store: opened.store, clock: systemClock, runner: null, masterKey })
  try {
    return await work(service)
  } finally {
    await service.close()
    await opened.release()
  }
}

/** Options of the data-key commands (`tokenvault keys rotate | reencrypt | destroy`). */
export interface DataKeyCommandOptions {
  /** A `--store` value. */
  store: string
  masterKey?: Uint8Array
  /** The tenant; default: every tenant of the store (`destroy` needs one). */
  tenant?: string
}

/** The tenants a data-key command acts on: the one named (which must exist), else every one. */
async function tenantsOf(service: ReturnType<typeof createService>, store: Store, tenant?: string) {
  await service.admin.verifyMasterKey()
  const all = (await store.listTenants()).filter((t) => t.keys?.destroyed_at === undefined)
  if (tenant === undefined) return all.map((t) => t.id)
  if (!all.some((t) => t.id === tenant))
    throw new Error(`--tenant: the store holds no tenant ${tenant} with keys`)
  return [tenant]
}

/** Runs `work` on a service over `options.store` (with its master key), then closes both. */
async function withDataKeys<T>(
  options: DataKeyCommandOptions,
  work: (service: ReturnType<typeof createService>, store: Store) => Promise<T>,
): Promise<T> {
  const opened = await openStore(options.store)
  const service = createService({
    store: opened.store,
    clock: systemClock,
    runner: null,
    ...(options.masterKey ? { masterKey: options.masterKey } : {}),
  })
  try {
    return await work(service, opened.store)
  } finally {
    await service.close()
    await opened.release()
  }
}

/**
 * `tokenvault keys rotate`: makes a new data-key version current for the tenant (or every tenant):
 * new seals use it at once, older versions still read until `keys reencrypt` retires them.
 */
export function rotateDataKeys(
  options: DataKeyCommandOptions,
): Promise<{ tenantId: string; version: number }[]> {
  return withDataKeys(options, async (service, store) => {
    const out: { tenantId: string; version: number }[] = []
    for (const tenantId of await tenantsOf(service, store, options.tenant)) {
      out.push({ tenantId, version: (await service.admin.rotateDataKey({ tenantId })).current })
    }
    return out
  })
}

/** Options of `reencryptStore` (`tokenvault keys reencrypt`). */
export interface ReencryptOptions extends DataKeyCommandOptions {
  /** Tokens per step (one guarded write each). */
  batchSize?: number
  /** Called after every step. */
  onProgress?: (progress: RekeyProgress, startedAt: number) => void
  /** Waits `ms` (the sweep waits so before retiring, while other processes may hold old keys). */
  sleep?: (ms: number) => Promise<void>
}

/**
 * `tokenvault keys reencrypt`: runs the re-encryption sweep of the tenant (or every tenant) to its
 * end: every record re-sealed under the newest version, then the older versions retired. Online:
 * servers may keep serving the store meanwhile (a PostgreSQL store; a file store admits one process).
 * Resumable: run it again after a crash and it continues from the place it stored.
 */
export function reencryptStore(options: ReencryptOptions): Promise<RekeyProgress[]> {
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)))
  return withDataKeys(options, async (service, store) => {
    const out: RekeyProgress[] = []
    for (const tenantId of await tenantsOf(service, store, options.tenant)) {
      const startedAt = Date.now()
      for (;;) {
        const progress = await service.admin.reencrypt({
          tenantId,
          ...(options.batchSize ? { batchSize: options.batchSize } : {}),
          onProgress: (p) => options.onProgress?.(p, startedAt),
        })
        if (progress.finished || progress.retireAt === undefined) {
          out.push(progress)
          break
        }
        await sleep(Math.max(0, Date.parse(progress.retireAt) - Date.now()) + 10)
      }
    }
    return out
  })
}

/** `tokenvault keys destroy`: crypto-shreds one tenant (its keys leave its record; its data never opens again). */
export function destroyTenantKeys(options: DataKeyCommandOptions & { tenant: string }): Promise<void> {
  return withDataKeys(options, async (service, store) => {
    const [tenantId] = await tenantsOf(service, store, options.tenant)
    await service.admin.destroyTenantKeys({ tenantId: tenantId! })
  })
}

/**
 * The progress line of `keys reencrypt`: a bar, counts and rate, e.g.
 * `tenant t1 [##########----------] 5000/10000 re-sealed (50%), 2500 records/s`.
 */
export function progressLine(p: RekeyProgress, startedAt: number, now = Date.now()): string {
  const total = Math.max(p.total, p.done)
  const share = total === 0 ? 1 : p.done / total
  const filled = Math.round(share * 20)
  const rate = Math.round(p.done / Math.max(0.001, (now - startedAt) / 1000))
  const state = p.finished ? ', older versions retired' : p.retireAt ? `, retiring at ${p.retireAt}` : ''
  return `tenant ${p.tenantId} [${'#'.repeat(filled)}${'-'.repeat(20 - filled)}] ${p.done}/${total} re-sealed (${Math.floor(share * 100)}%), ${rate} records/s${state}`
}
