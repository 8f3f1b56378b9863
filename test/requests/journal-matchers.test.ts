import { describe, expect, it } from 'vitest'
import { createTestVault, type JournalMatchers, journalMatchers, NotBuiltError } from '../../testing/index.js'

expect.extend(journalMatchers)
declare module 'vitest' {
  // biome-ignore lint/suspicious/noExplicitAny: vitest's own declaration
  interface Assertion<T = any> extends JournalMatchers<T> {}
}

const get = (path: string, key: string) =>
  new Request(`http://vault${path}`, { headers: { 'svc-api-key': key } })

describe('journal matchers', () => {
  it('toHaveJournaled passes for a successful operation touching the ids, and fails naming what is there', async () => {
    const vault = await createTestVault()
    const token = await vault.client().tokens.create({ type: 'token', data: 'x' })
    expect(vault).toHaveJournaled('token.create', { ids: [token.id] })
    expect(vault).not.toHaveJournaled('token.create', { ids: ['other'] })
    expect(vault).not.toHaveJournaled('token.delete')
    const failed = journalMatchers.toHaveJournaled(vault, 'token.create', { ids: ['other'] })
    expect(failed.message()).toContain(token.id)
    await vault.close()
  })

  it('toHaveNoUnexpectedFailures fails on a 501 of a route not built, not on a 4xx or an injected 503', async () => {
    const vault = await createTestVault()
    await vault.http(get('/tokens/missing', vault.keys.private))
    vault.faults.add({ path: '/tokens/{id}', status: 503 })
    await vault.http(get('/tokens/missing', vault.keys.private))
    expect(vault).toHaveNoUnexpectedFailures()
    const answer = await vault.http(get('/tenants/self/owner', vault.keys.management))
    expect(answer.status).toBe(501)
    expect(vault).not.toHaveNoUnexpectedFailures()
    expect(journalMatchers.toHaveNoUnexpectedFailures(vault).message()).toContain('does not build')
    expect(vault).toHaveNoUnexpectedFailures({ allow: [501] })
    await vault.close()
  })

  it("notBuilt: 'throw' fails the call of a route not built", async () => {
    const vault = await createTestVault({ notBuilt: 'throw' })
    await expect(vault.http(get('/tenants/self/owner', vault.keys.management))).rejects.toThrow(NotBuiltError)
    await vault.close()
  })
})
