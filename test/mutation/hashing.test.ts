import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { sha256 } from '../../src/kernel/ids.js'
import { createTestVault, loadFixture } from '../../testing/vault.js'

/**
 * API keys are stored only as their SHA-256 (docs/security.md, "Data at rest"), checked
 * against published vectors written out, not against the helper that makes them.
 */
describe('key hashing', () => {
  it('is SHA-256 as lowercase hex (FIPS 180-2 vectors)', () => {
    expect(sha256('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
    expect(sha256('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855')
  })

  it('a fixed API key is stored as its known SHA-256 and never as itself', async () => {
    const store = memoryStore()
    const vault = await createTestVault({ store })
    const key = 'key_backend_0123456789abcdefghij'
    await loadFixture(vault.service, {
      tenants: [
        {
          id: 'acme',
          name: 'Acme',
          applications: [{ name: 'backend', type: 'private', key, permissions: ['token:read'] }],
        },
      ],
    })
    const dump = JSON.stringify(await store.dump())
    expect(dump).toContain('66b7cc92c7b4c3432ce9361b7c7940524d29fdfd7e8a7e9706558888105c1fcd')
    expect(dump).not.toContain(key)
    await vault.close()
  })
})
