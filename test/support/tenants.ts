import type { AccessRule, Service } from '../../entry/index.js'

/** A rule that reveals every token to a key that creates and reads them. */
export const REVEAL_ALL: AccessRule = {
  description: 'all',
  priority: 1,
  container: '/',
  transform: 'reveal',
  permissions: ['token:create', 'token:read'],
}

/**
 * A new tenant of `service` with a private application that creates and reads tokens (or holds
 * `permissions`, when given; under `rules`, when given), its key and its client.
 */
export async function tenantWithClient(
  service: Service,
  name: string,
  rules?: AccessRule[],
  permissions: AccessRule['permissions'] = ['token:create', 'token:read'],
) {
  const tenant = await service.admin.createTenant({ name })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'app',
    type: 'private',
    permissions,
    ...(rules ? { rules } : {}),
  })
  return { tenant, key, client: service.connect(key) }
}

/** Makes keys of tenant `tenantId`: an application of `type` with `permissions`, answering its key. */
export const keyMaker =
  (service: Service, tenantId: string) =>
  async (type: 'private' | 'management' | 'public', permissions: string[]) =>
    (await service.admin.createApplication({ tenantId, name: type, type, permissions: permissions as never }))
      .key
