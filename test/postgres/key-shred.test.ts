import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { afterAll, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import { shreddingHoldsOnCopies } from '../encryption/key-copies.js'
import { describePostgres, pgProgram, testPool } from './database.js'

/** A PostgreSQL client program (pg_dump, psql) of the installed server, or from the PATH. */
const program = (name: string) => pgProgram(name) ?? name

describePostgres('crypto-shredding on PostgreSQL', (url) => {
  const databases: string[] = []
  const pool = testPool(url, 1)
  const database = async () => {
    const name = `tv_shred_${randomBytes(4).toString('hex')}`
    await pool.query(`CREATE DATABASE ${name}`)
    databases.push(name)
    const at = new URL(url)
    at.pathname = `/${name}`
    return at.href
  }
  afterAll(async () => {
    for (const name of databases) await pool.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await pool.end()
  })

  it('a pg_dump taken after reads nothing of the tenant; one taken before stops once the master key is rotated and retired', async () => {
    const live = await database()
    await shreddingHoldsOnCopies(
      () => postgresStore({ connectionString: live }),
      async () => {
        const dump = execFileSync(program('pg_dump'), ['--dbname', live], { maxBuffer: 64 << 20 })
        const copy = await database()
        execFileSync(program('psql'), ['--quiet', '--dbname', copy, '-v', 'ON_ERROR_STOP=1'], {
          input: dump,
          stdio: ['pipe', 'ignore', 'pipe'],
        })
        return () => postgresStore({ connectionString: copy })
      },
    )
  }, 60_000)
})
