/** The per-tenant bounds as `serve` flags and environment variables: checked first, then passed to the service. */
import { describe, expect, it } from 'vitest'
import { start } from './spawn.js'

describe('serve: per-tenant bounds', () => {
  it('a bound that is not a whole number >= 1 exits 2 naming the flag and its variable', async () => {
    const cli = start([
      'serve',
      '--port',
      '0',
      '--store',
      'memory',
      '--max-idempotency-records-per-tenant',
      '0',
    ])
    expect((await cli.exited)[0]).toBe(2)
    expect(cli.stderr()).toContain(
      '--max-idempotency-records-per-tenant (TOKENVAULT_MAX_IDEMPOTENCY_RECORDS_PER_TENANT) must be a whole number',
    )
  })

  it('TOKENVAULT_MAX_UNAUTHORIZED_SESSIONS_PER_TENANT=1: the second session not yet authorized answers 429', async () => {
    const cli = start(['serve', '--port', '0', '--store', 'memory', '--log', 'none'], undefined, {
      TOKENVAULT_MAX_UNAUTHORIZED_SESSIONS_PER_TENANT: '1',
    })
    const url = (await cli.line(1)).slice('listening on '.length)
    const management = (await cli.line(2)).slice('management key: '.length)
    const made = await fetch(`${url}/applications`, {
      method: 'POST',
      headers: { 'SVC-API-KEY': management, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'web', type: 'public', permissions: ['token:create'] }),
    })
    expect(made.status).toBe(201)
    const { key } = (await made.json()) as { key: string }
    const session = () => fetch(`${url}/sessions`, { method: 'POST', headers: { 'SVC-API-KEY': key } })
    expect((await session()).status).toBe(201)
    const refused = await session()
    expect({ status: refused.status, retryAfter: refused.headers.get('retry-after') }).toEqual({
      status: 429,
      retryAfter: '180',
    })
    cli.child.kill('SIGTERM')
    await cli.exited
  })
})
