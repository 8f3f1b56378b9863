import type { Service } from '../../entry/index.js'

/** A new tenant of `service` with a private application that creates and reads tokens, and its client. */
export async function tenantWithClient(service: Service, name: string) {
  const tenant = await service.admin.createTenant({ name })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'app',
    type: 'private',
    permissions: ['token:create', 'token:read'],
  })
  return { tenant, client: service.connect(key) }
}
