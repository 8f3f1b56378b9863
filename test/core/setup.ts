import { memoryStore } from '../../adapters/memory/index.js'
import { ServiceError } from '../../entry/index.js'
import { PERMISSIONS_BY_TYPE } from '../../src/applications/permissions.js'
import { lazyRunner } from '../../src/kernel/runner.js'
import type { AccessRule, Permission } from '../../src/kernel/types.js'
import type { Store } from '../../src/store/contract.js'
import { createTestVault } from '../../testing/vault.js'

export const ALL_TOKEN: Permission[] = [...PERMISSIONS_BY_TYPE.private]

/**
 * A test vault (`tokenvault/testing`) on a fresh memory store, or the one given, with the default
 * formula runner, a tenant `acme`, and a helper to mint more keys. `full` is the vault's private
 * application, which reveals every token.
 */
export async function setup(
  options: { store?: Store; sessionTtlMs?: number; transactionTtlMs?: number } = {},
) {
  const store = options.store ?? memoryStore()
  const vault = await createTestVault({
    ...options,
    store,
    tenantName: 'acme',
    runner: lazyRunner(async () => (await import('../../adapters/sandbox/index.js')).sandboxRunner()),
  })
  const { clock, service, tenant } = vault
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
  const full = { key: vault.keys.private, application: vault.applications.private, client: vault.client() }
  return { vault, clock, store, service, tenant, keyFor, full, client: full.client }
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
