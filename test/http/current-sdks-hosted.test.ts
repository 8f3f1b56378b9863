/**
 * Today's SDKs, unmodified, on a real socket (`headerPrefix: 'BT'`): the reference's calls a tenant
 * owned by the host application answers from a fixed list or refuses — `tenants.self.update` and
 * `delete` (403: the host manages tenants; nothing changes), the usage report (the token count),
 * application templates and roles (none here). Each test names the reference page it checks.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type CurrentSdkVault, failedStatus, startCurrentSdkVault } from './current-sdk-vault.js'

let vault: CurrentSdkVault
beforeAll(async () => {
  vault = await startCurrentSdkVault(null as never)
})
afterAll(async () => {
  await vault.close()
})

/** The problem a failed node-sdk call carried: its status and `detail`. */
async function problemOf(promise: Promise<unknown>): Promise<{ status: number; detail: string }> {
  const error = (await promise.then(
    () => {
      throw new Error('expected the call to fail')
    },
    (e: unknown) => e,
  )) as { statusCode?: number; body?: { detail?: string } }
  return { status: error.statusCode ?? 0, detail: error.body?.detail ?? '' }
}

describe('@basis-theory/node-sdk 5.x', () => {
  it('Update and Delete Tenant (docs/api/tenants/tenants): 403, the host manages the tenant; nothing changes', async () => {
    const bt = vault.node(vault.management)
    const update = await problemOf(
      bt.tenants.self.update({ name: 'renamed', settings: { deduplicate_tokens: 'true' } }),
    )
    expect(update.status).toBe(403)
    expect(update.detail).toMatch(/host application manages this tenant/)
    const remove = await problemOf(bt.tenants.self.delete())
    expect(remove).toEqual({ status: 403, detail: update.detail })
    expect(await bt.tenants.self.get()).toMatchObject({ id: vault.tenantId, name: 'sdk' })
    // Without the permission, the 403 names the permission instead.
    const reader = vault.node(await vault.key('management', ['tenant:read']))
    expect((await problemOf(reader.tenants.self.update({ name: 'x' }))).detail).toMatch(/tenant:update/)
    expect((await problemOf(reader.tenants.self.delete())).detail).toMatch(/tenant:delete/)
  })

  it('Get Tenant Usage Report (docs/api/tenants/tenants): the count of unexpired, committed tokens; needs report:read', async () => {
    const bt = vault.node(vault.management)
    const before = (await bt.tenants.self.getUsageReports()).totalTokens!
    const writer = vault.node(await vault.key('private', ['token:create']))
    await writer.tokens.create({ type: 'token', data: 'a' })
    const soon = new Date(vault.clock.now().getTime() + 60_000).toISOString()
    await writer.tokens.create({ type: 'token', data: 'b', expiresAt: soon })
    expect((await bt.tenants.self.getUsageReports()).totalTokens).toBe(before + 2)
    vault.clock.advance(60_000)
    expect((await bt.tenants.self.getUsageReports()).totalTokens).toBe(before + 1)
    const reader = vault.node(await vault.key('management', ['tenant:read']))
    expect(await failedStatus(reader.tenants.self.getUsageReports())).toBe(403)
  })

  it('Application Templates (docs/api/applications/application-templates): none here — an empty list, 404 by id; needs application:read', async () => {
    const bt = vault.node(vault.management)
    expect(await bt.applicationTemplates.list()).toEqual([])
    expect(await failedStatus(bt.applicationTemplates.get('8d2b4a6c-0000-4000-8000-000000000000'))).toBe(404)
    const other = vault.node(await vault.key('management', ['tenant:read']))
    expect(await failedStatus(other.applicationTemplates.list())).toBe(403)
  })

  it('Roles: none here — tenant members are the portal’s people, and a host-owned tenant has none', async () => {
    expect(await vault.node(vault.management).roles.list()).toEqual([])
  })
})

describe('@basis-theory/basis-theory-js 4.x', () => {
  it('tenants.update and tenants.delete answer 403; retrieveUsageReport counts tokens', async () => {
    const bt = await vault.js(vault.management)
    expect(await failedStatus(bt.tenants.update({ name: 'renamed' }))).toBe(403)
    expect(await failedStatus(bt.tenants.delete())).toBe(403)
    expect((await bt.tenants.retrieve()).name).toBe('sdk')
    const report = await bt.tenants.retrieveUsageReport()
    expect(report.totalTokens).toBeTypeOf('number')
    expect(report.tokenReport.totalTokens).toBe(report.totalTokens)
  })

  it('applicationTemplates.list is empty; retrieve answers 404', async () => {
    const bt = await vault.js(vault.management)
    expect(await bt.applicationTemplates.list()).toEqual([])
    expect(await failedStatus(bt.applicationTemplates.retrieve('8d2b4a6c-0000-4000-8000-000000000000'))).toBe(
      404,
    )
  })
})
