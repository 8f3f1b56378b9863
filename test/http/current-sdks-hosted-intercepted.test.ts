/**
 * test/http/current-sdks-hosted.test.ts again, with the SDK clients built with no `baseUrl` /
 * `apiBaseUrl` and answered in process by `tokenvault/intercept` (see test/intercept/current-sdk-vault.ts).
 */
import { vi } from 'vitest'

vi.mock('./current-sdk-vault.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('./current-sdk-vault.js')>()
  const { intercepted } = await import('../intercept/current-sdk-vault.js')
  return { ...actual, startCurrentSdkVault: intercepted(actual.startCurrentSdkVault) }
})

await import('./current-sdks-hosted.test.js')
