/**
 * The whole of test/http/current-sdks.test.ts again — every call through both of today's SDKs — but
 * with the clients built with no `baseUrl` / `apiBaseUrl` and answered in process by
 * `tokenvault/intercept` (see test/intercept/current-sdk-vault.ts): the same rows hold for code that
 * ships unchanged.
 */
import { vi } from 'vitest'

vi.mock('./current-sdk-vault.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('./current-sdk-vault.js')>()
  const { intercepted } = await import('../intercept/current-sdk-vault.js')
  return { ...actual, startCurrentSdkVault: intercepted(actual.startCurrentSdkVault) }
})

await import('./current-sdks.test.js')
