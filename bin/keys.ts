import { createService, systemClock } from '../entry/index.js'
import { PERMISSIONS_BY_TYPE } from '../src/applications/permissions.js'
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
