/**
 * A client encryption key's private key is never in the clear in PostgreSQL: a `pg_dump` of the
 * store's schema holds no trace of it (base64url, base64 or hex), while its public key and id are
 * there; the service still decrypts a JWE made to the key.
 */
import { execFileSync } from 'node:child_process'
import * as jose from 'jose'
import { expect, it, vi } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import { createService, manualClock } from '../../entry/index.js'
import { describePostgres, freshSchema, pgProgram, testPool } from './database.js'

/** Every private key the vault exports (its JWK `d`): the canaries. */
const exported = vi.hoisted(() => [] as string[])
vi.mock('jose', async (original) => {
  const real = await original<typeof import('jose')>()
  return {
    ...real,
    exportJWK: async (key: Parameters<typeof real.exportJWK>[0]) => {
      const jwk = await real.exportJWK(key)
      if (typeof jwk.d === 'string') exported.push(jwk.d)
      return jwk
    },
  }
})

describePostgres('client encryption keys at rest (PostgreSQL)', (url) => {
  it('a pg_dump of the schema holds no trace of the private key; a JWE to the key still decrypts', async () => {
    const pool = testPool(url, 2)
    const schema = freshSchema()
    try {
      const store = await postgresStore({ pool, schema })
      const service = createService({
        store,
        clock: manualClock(),
        runner: null,
        masterKey: Buffer.alloc(32, 4),
      })
      const tenant = await service.admin.createTenant({ name: 't' })
      const { key } = await service.admin.createApplication({
        tenantId: tenant.id,
        name: 'm',
        type: 'management',
        permissions: ['keys:create'],
      })
      const app = await service.admin.createApplication({
        tenantId: tenant.id,
        name: 'p',
        type: 'public',
        permissions: ['token:create'],
      })
      exported.length = 0
      const created = await service.connect(key).keys.create()
      const d = exported[0]!
      const b64 = created.public_key_pem.replace(/-----(BEGIN|END) PUBLIC KEY-----/g, '').trim()
      const x = Buffer.from(b64, 'base64').toString('base64url')
      const jwe = await new jose.CompactEncrypt(new TextEncoder().encode('"from the browser"'))
        .setProtectedHeader({ alg: 'ECDH-ES', enc: 'A256GCM', kid: created.id })
        .encrypt(await jose.importJWK({ kty: 'OKP', crv: 'X25519', x }, 'ECDH-ES'))
      const token = await service.connect(app.key).tokens.create({ type: 'token', encrypted: jwe })
      expect(token.type).toBe('token')
      const binary = pgProgram('pg_dump')
      expect(binary, 'pg_dump is installed').toBeDefined()
      const dump = execFileSync(binary!, ['--dbname', url, '--schema', schema], {
        encoding: 'latin1',
        maxBuffer: 64 << 20,
      })
      expect(dump).toContain(created.id)
      expect(dump).toContain(x)
      const raw = Buffer.from(d, 'base64url')
      for (const needle of [d, raw.toString('base64').slice(0, 40), raw.toString('hex')])
        expect(dump.includes(needle), needle).toBe(false)
      await service.close()
    } finally {
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await pool.end()
    }
  }, 60_000)
})
