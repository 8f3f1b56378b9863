/** The per-tenant bounds as `serve` flags and environment variables: checked first, then passed to the service. */
import { describe, expect, it } from 'vitest'
import { usage } from '../../bin/options.js'
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

  it('--max-async-reacts-per-tenant and --max-async-reacts: no effect, still accepted, and --help says so', async () => {
    // Each option's entry, its wrapped lines joined (a long flag puts its text on the next line).
    const entries = usage(200).split(/\n(?= {2}-)/)
    for (const flag of ['max-async-reacts-per-tenant', 'max-async-reacts']) {
      const entry = entries.find((e) => e.startsWith(`  --${flag} <n>`))?.replace(/\s+/g, ' ')
      expect(entry).toContain('(no effect; kept for compatibility)')
      expect(entry).not.toContain('default')
    }
    const cli = start(
      ['serve', '--port', '0', '--store', 'memory', '--log', 'none', '--max-async-reacts-per-tenant', '1'],
      undefined,
      { TOKENVAULT_MAX_ASYNC_REACTS: '1' },
    )
    expect(await cli.line(1)).toMatch(/^listening on /)
    cli.child.kill('SIGTERM')
    expect((await cli.exited)[0]).toBe(0)
  })
})
