/**
 * Starting and stopping like a tool run in CI: a store that can't be opened is named with what to
 * check and leaves nothing behind (no `.tokenvault.key`); a malformed PostgreSQL URL is refused before
 * any connection; a signal during start-up (the store wait) or a second signal while draining is a
 * clean stop that answers the request in flight.
 */
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { start } from './spawn.js'

const dirs: string[] = []
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true })
})

async function scratch() {
  const dir = await mkdtemp(join(tmpdir(), 'tokenvault-server-start-'))
  dirs.push(dir)
  return dir
}

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** Resolves once the CLI's stderr contains `text`. */
async function stderrHas(cli: ReturnType<typeof start>, text: string) {
  while (!cli.stderr().includes(text)) {
    const exited = await Promise.race([
      cli.exited.then(() => true),
      new Promise<false>((resolve) => cli.child.stderr!.once('data', () => resolve(false))),
    ])
    if (exited && !cli.stderr().includes(text)) throw new Error(`exited without "${text}": ${cli.stderr()}`)
  }
}

it('a database that refuses the connection: exit 1, the store and what to check named, no key file written', async () => {
  const dir = await scratch()
  const port = await closedPort()
  const cli = start(
    ['serve', '--port', '0', '--store', `postgres://vault:secretpw@127.0.0.1:${port}/vaultdb`],
    dir,
  )
  const [code] = await cli.exited
  expect(code).toBe(1)
  const said = cli.stderr()
  expect(said).toContain(`the PostgreSQL store at 127.0.0.1:${port} (database vaultdb, user vault)`)
  expect(said).toContain('connection refused (ECONNREFUSED): is PostgreSQL running')
  expect(said).toContain('--store-wait-ms')
  expect(said).not.toContain('secretpw')
  expect(existsSync(join(dir, '.tokenvault.key'))).toBe(false)
}, 60_000)

it('a malformed PostgreSQL URL is refused with exit 2 before any connection, its password not shown', async () => {
  const dir = await scratch()
  const cli = start(['serve', '--store', 'postgres://vault:secretpw@localhost:54x2/vaultdb'], dir)
  const [code] = await cli.exited
  expect(code).toBe(2)
  expect(cli.stderr()).toContain('is not a valid URL')
  expect(cli.stderr()).not.toContain('secretpw')
  const fragment = start(['serve', '--store', 'postgres://vault@localhost:5432/vaultdb#x'], dir)
  expect((await fragment.exited)[0]).toBe(2)
  expect(fragment.stderr()).toContain('percent-encode # as %23')
  expect(existsSync(join(dir, '.tokenvault.key'))).toBe(false)
}, 60_000)

it('--store-wait-ms: a progress line per try while the database is down; SIGTERM during the wait exits 0', async () => {
  const dir = await scratch()
  const port = await closedPort()
  const cli = start(
    [
      'serve',
      '--port',
      '0',
      '--store',
      `postgres://vault@127.0.0.1:${port}/vaultdb`,
      '--store-wait-ms',
      '600000',
    ],
    dir,
  )
  await stderrHas(
    cli,
    `waiting for the PostgreSQL store at 127.0.0.1:${port} (database vaultdb, user vault): connection refused; next try in`,
  )
  cli.child.kill('SIGTERM')
  const [code, signal] = await cli.exited
  expect(signal).toBeNull()
  expect(code).toBe(0)
  expect(cli.stderr()).toContain('stopped before listening')
  expect(existsSync(join(dir, '.tokenvault.key'))).toBe(false)
}, 60_000)

it('bad shutdown and wait values are refused with exit 2', async () => {
  for (const args of [
    ['--shutdown-delay-ms=-1'],
    ['--shutdown-grace-ms', 'soon'],
    ['--store-wait-ms', '1000000000'],
  ]) {
    const cli = start(['serve', '--store', 'memory', ...args])
    expect((await cli.exited)[0]).toBe(2)
    expect(cli.stderr()).toContain(`${args[0]!.split('=')[0]} (TOKENVAULT_`)
  }
}, 60_000)

const ADMIN = 'admin-token-for-server-start-0123'

it('a second SIGTERM while a request is in flight: the request is answered and the exit is 0', async () => {
  const cli = start([
    'serve',
    '--port',
    '0',
    '--store',
    'memory',
    '--log',
    'none',
    '--test-mode',
    '--admin-token',
    ADMIN,
  ])
  const url = (await cli.line(1)).slice('listening on '.length)
  const auth = { authorization: `Bearer ${ADMIN}` }
  const added = await fetch(`${url}/_test/faults`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ method: 'GET', path: '/tokens/{id}', delay_ms: 1500 }),
  })
  expect(added.status).toBe(201)
  const inFlight = fetch(`${url}/tokens/slow`)
  const faults = async () =>
    ((await (await fetch(`${url}/_test/faults`, { headers: auth })).json()) as { data: unknown[] }).data
      .length
  for (let i = 0; i < 500 && (await faults()) > 0; i++) await new Promise((resolve) => setImmediate(resolve))
  cli.child.kill('SIGTERM')
  await stderrHas(cli, 'SIGTERM: shutting down')
  cli.child.kill('SIGTERM')
  await stderrHas(cli, 'SIGTERM again')
  expect((await inFlight).status).toBe(401)
  const [code] = await cli.exited
  expect(code).toBe(0)
}, 120_000)

it('SIGTERM right after the listening line exits 0, not by the signal', async () => {
  for (let round = 0; round < 3; round++) {
    const cli = start(['serve', '--port', '0', '--store', 'memory', '--log', 'none'])
    await cli.line(1)
    cli.child.kill('SIGTERM')
    const [code, signal] = await cli.exited
    expect(signal).toBeNull()
    expect(code).toBe(0)
  }
}, 120_000)
