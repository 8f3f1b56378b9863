/**
 * `--store-wait-ms` against a database that starts after the vault (Docker Compose ordering): the
 * server prints a progress line per try while nothing listens on the database's port, and starts
 * serving once PostgreSQL appears there (here: a TCP relay to the test database opened only after
 * the first progress line).
 */
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { createConnection, createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterEach, expect, it } from 'vitest'
import { start } from '../cli/spawn.js'
import { describePostgres } from './database.js'

const relays: Server[] = []
const dirs: string[] = []
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true })
  for (const relay of relays.splice(0)) await new Promise((resolve) => relay.close(resolve))
})

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** Relays connections on `port` to `target` (the test database). */
async function relay(port: number, target: URL) {
  const server = createServer((socket) => {
    const upstream = createConnection(Number(target.port || 5432), target.hostname)
    socket.pipe(upstream).pipe(socket)
    socket.on('error', () => upstream.destroy())
    upstream.on('error', () => socket.destroy())
  })
  relays.push(server)
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
}

describePostgres('serve --store-wait-ms', (url) => {
  it('waits for a database that starts after it, with progress lines, then serves', async () => {
    const database = `tv_wait_${randomBytes(5).toString('hex')}`
    const admin = new pg.Client({ connectionString: url })
    await admin.connect()
    await admin.query(`CREATE DATABASE ${database}`)
    try {
      const port = await closedPort()
      const target = new URL(url)
      const late = new URL(url)
      late.hostname = '127.0.0.1'
      late.port = String(port)
      late.pathname = `/${database}`
      // Its own directory: the master key file is created there.
      const dir = await mkdtemp(join(tmpdir(), 'tokenvault-store-wait-'))
      dirs.push(dir)
      const cli = start(['serve', '--port', '0', '--store', late.toString(), '--store-wait-ms', '60000'], dir)
      while (!cli.stderr().includes('waiting for the PostgreSQL store at 127.0.0.1'))
        await new Promise((resolve) => cli.child.stderr!.once('data', resolve))
      expect(cli.stderr()).toContain('connection refused; next try in')
      await relay(port, target)
      const listening = await cli.line(1)
      expect(listening).toMatch(/^listening on http:\/\/127\.0\.0\.1:\d+$/)
      cli.child.kill('SIGTERM')
      expect((await cli.exited)[0]).toBe(0)
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
      await admin.end()
    }
  }, 120_000)
})
