import { existsSync } from 'node:fs'
import { createService, systemClock } from '../entry/index.js'
import { PERMISSIONS_BY_TYPE } from '../src/applications/permissions.js'
import { readKeyFile, writeNewKeyFile } from './master-key.js'
import { openStore } from './stores.js'

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
