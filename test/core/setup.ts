import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock, ServiceError } from '../../src/index.js'
import { PERMISSIONS_BY_TYPE } from '../../src/schemas/access.js'
import type { Store } from '../../src/store/contract.js'
import type { AccessRule, Permission } from '../../src/types.js'

export const ALL_TOKEN: Permission[] = [...PERMISSIONS_BY_TYPE.private]

/** A service on a fresh memory store with a manual clock, one tenant, and helpers to mint keys. */
export async function setup(
  options: { store?: Store; sessionTtlMs?: number; transactionTtlMs?: number } = {},
) {
  const clock = manualClock('2030-01-01T00:00:00.000Z')
  const store = options.store ?? memoryStore()
  const service = createService({ store, clock, ...options })
  const tenant = await service.admin.createTenant({ name: 'acme' })
  const keyFor = async (
    type: 'private' | 'public' | 'management',
    permissions: Permission[] = [],
    rules?: AccessRule[],
    tenantId = tenant.id,
  ) => {
    const { key, application } = await service.admin.createApplication({
      tenantId,
      name: `${type} app`,
      type,
      permissions,
      ...(rules ? { rules } : {}),
    })
    return { key, application, client: service.connect(key) }
  }
  const full = await keyFor('private', ALL_TOKEN, [
    { description: 'all', priority: 1, container: '/', transform: 'reveal', permissions: ALL_TOKEN },
  ])
  return { clock, store, service, tenant, keyFor, full, client: full.client }
}

/** Awaits `promise` and returns the ServiceError it rejects with (fails the test if it resolves). */
export async function failure(promise: Promise<unknown>): Promise<ServiceError> {
  try {
    await promise
  } catch (error) {
    if (error instanceof ServiceError) return error
    throw error
  }
  throw new Error('expected a ServiceError, but the call succeeded')
}
