/**
 * A document's bytes are never in the clear in PostgreSQL: a `pg_dump` of the store's schema holds
 * no trace of a canary (nor of its base64), the chunks are rows of their own, and the service reads
 * the bytes back; a delete removes every chunk row.
 */
import { execFileSync } from 'node:child_process'
import { expect, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import { createService, manualClock } from '../../entry/index.js'
import { describePostgres, freshSchema, pgProgram, testPool } from './database.js'

const CANARY = 'canary-9d0c5e-document-bytes-pg'

describePostgres('document bytes at rest (PostgreSQL)', (url) => {
  it('a pg_dump of the schema holds no trace of the canary; the service reads it back; a delete drops every chunk', async () => {
    const pool = testPool(url, 2)
    const schema = freshSchema()
    try {
      const store = await postgresStore({ pool, schema })
      const service = createService({
        store,
        clock: manualClock(),
        runner: null,
        masterKey: Buffer.alloc(32, 9),
      })
      const tenant = await service.admin.createTenant({ name: 't' })
      const { key } = await service.admin.createApplication({
        tenantId: tenant.id,
        name: 'p',
        type: 'private',
        permissions: ['documents:create', 'documents:reveal', 'documents:delete'],
      })
      const client = service.connect(key)
      const bytes = new TextEncoder().encode(CANARY.repeat(6000)) // 186 000 bytes: three chunks
      const made = await client.documents.upload({
        document: bytes,
        request: { metadata: { kind: 'visible-meta' } },
      })
      const back = Buffer.from(await new Response((await client.documents.data(made.id)).body).arrayBuffer())
      expect(back.equals(Buffer.from(bytes))).toBe(true)
      const rows = await pool.query(`SELECT count(*)::int AS n FROM ${schema}.document_chunks`)
      expect(rows.rows[0].n).toBe(3)
      const binary = pgProgram('pg_dump')
      expect(binary, 'pg_dump is installed').toBeDefined()
      const dump = execFileSync(binary!, ['--dbname', url, '--schema', schema], {
        encoding: 'latin1',
        maxBuffer: 64 << 20,
      })
      expect(dump).toContain('visible-meta')
      for (const needle of [CANARY, Buffer.from(CANARY.repeat(3)).toString('base64').slice(0, 24)])
        expect(dump.includes(needle), needle).toBe(false)
      await client.documents.delete(made.id)
      const left = await pool.query(`SELECT count(*)::int AS n FROM ${schema}.document_chunks`)
      expect(left.rows[0].n).toBe(0)
      await service.close()
    } finally {
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await pool.end()
    }
  }, 60_000)
})
