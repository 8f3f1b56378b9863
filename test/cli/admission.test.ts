/** The request path's admission bounds as `serve` flags and environment variables. */
import { once } from 'node:events'
import { connect } from 'node:net'
import { describe, expect, it } from 'vitest'
import { start } from './spawn.js'

/** Sends a create whose body is announced at `length` bytes but only begun: it stays in flight. */
async function begunCreate(url: string, key: string, length: number) {
  const { hostname, port } = new URL(url)
  const socket = connect(Number(port), hostname)
  await once(socket, 'connect')
  socket.write(
    `POST /tokens HTTP/1.1\r\nhost: ${hostname}\r\ncontent-type: application/json\r\n` +
      `content-length: ${length}\r\nsvc-api-key: ${key}\r\n\r\n{"type":"x","data":"`,
  )
  return socket
}

describe('serve: admission bounds of the request path', () => {
  it('a bound that is not a whole number >= 1 exits 2 naming the flag and its variable', async () => {
    const cli = start(['serve', '--port', '0', '--store', 'memory', '--max-in-flight-per-tenant', '0'])
    expect((await cli.exited)[0]).toBe(2)
    expect(cli.stderr()).toContain(
      '--max-in-flight-per-tenant (TOKENVAULT_MAX_IN_FLIGHT_PER_TENANT) must be a whole number',
    )
  })

  it('the contended share is a flag too: 0 exits 2 naming it and its variable', async () => {
    const cli = start([
      'serve',
      '--port',
      '0',
      '--store',
      'memory',
      '--max-in-flight-per-tenant-contended',
      '0',
    ])
    expect((await cli.exited)[0]).toBe(2)
    expect(cli.stderr()).toContain(
      '--max-in-flight-per-tenant-contended (TOKENVAULT_MAX_IN_FLIGHT_PER_TENANT_CONTENDED) must be a whole number',
    )
  })

  it('--max-in-flight-per-tenant 1, TOKENVAULT_MAX_QUEUED_PER_TENANT=1: a third create answers 429 at once', async () => {
    const cli = start(
      ['serve', '--port', '0', '--store', 'memory', '--log', 'none', '--max-in-flight-per-tenant', '1'],
      undefined,
      { TOKENVAULT_MAX_QUEUED_PER_TENANT: '1' },
    )
    const url = (await cli.line(1)).slice('listening on '.length)
    const key = (await cli.line(2)).slice('management key: '.length)
    const made = await fetch(`${url}/applications`, {
      method: 'POST',
      headers: { 'SVC-API-KEY': key, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'server', type: 'private', permissions: ['token:create'] }),
    })
    const { key: privateKey } = (await made.json()) as { key: string }
    // Three creates whose bodies never end: whichever the server reads first is admitted and stays
    // in flight reading its body, the next waits its turn, and the last is refused at once. The
    // order the server sees three connections in is its own, so the test waits for any answer.
    const sockets = [
      await begunCreate(url, privateKey, 1000),
      await begunCreate(url, privateKey, 1000),
      await begunCreate(url, privateKey, 1000),
    ]
    const answer = await Promise.race(
      sockets.map((socket) => once(socket, 'data').then(([chunk]) => String(chunk))),
    )
    expect(answer).toMatch(/^HTTP\/1\.1 429 /)
    expect(answer.toLowerCase()).toContain('retry-after: 1\r\n')
    for (const socket of sockets) socket.destroy()
    cli.child.kill('SIGTERM')
    await cli.exited
    // A loaded machine takes seconds to start the CLI from source.
  }, 60_000)
})
