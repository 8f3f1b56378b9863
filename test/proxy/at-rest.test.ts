/**
 * A pre-configured proxy's configuration is never at rest in the clear: the file store's records and
 * its data file hold no trace of a canary value; read back through the service, it opens.
 */
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { createService, manualClock } from '../../entry/index.js'

const CANARY = 'canary-3f9d2e-proxy-configuration'

describe('proxy configuration at rest', () => {
  it('the file store keeps it sealed (records and data file); the service reads it back', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tokenvault-proxy-at-rest-'))
    try {
      const store = await fileStore({ path: dir })
      const service = createService({
        store,
        clock: manualClock(),
        runner: null,
        masterKey: Buffer.alloc(32, 7),
      })
      const tenant = await service.admin.createTenant({ name: 't' })
      const { key } = await service.admin.createApplication({
        tenantId: tenant.id,
        name: 'm',
        type: 'management',
        permissions: ['proxy:create', 'proxy:read'],
      })
      const client = service.connect(key)
      const made = await client.proxies.create({
        name: 'p',
        destination_url: 'https://api.example.test',
        configuration: { SECRET: CANARY },
      })
      expect((await client.proxies.get(made.id)).configuration).toEqual({ SECRET: CANARY })
      const dump = await store.dump()
      expect(dump.proxies).toHaveLength(1)
      expect(JSON.stringify(dump)).not.toContain(CANARY)
      expect(readFileSync(join(dir, 'data.mdb')).includes(Buffer.from(CANARY))).toBe(false)
      await service.close()
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
