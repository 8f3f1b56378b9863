/** Operating the server: its log lines, its refusal of bad options before writing anything, its start errors. */
import { existsSync } from 'node:fs'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { explainStartError, isCorsOrigin } from '../../bin/checks.js'
import { formatEvent, jsonEvent } from '../../bin/serve.js'
import { StoreError } from '../../src/store/error.js'
import { setup } from '../http/setup.js'
import { start } from './spawn.js'

describe('log lines', () => {
  it('an expected 503 (the store unavailable) is one line without a stack; every line has the request id', () => {
    const error = new StoreError('unavailable', 'connection refused')
    expect(error.stack).toContain('\n')
    const expected = {
      kind: 'error',
      method: 'GET',
      path: '/tokens/x',
      error,
      requestId: 'req-1',
      expected: true,
    } as const
    const text = formatEvent(expected)
    expect(text).not.toContain('\n')
    expect(text).toMatch(/GET \/tokens\/x id=req-1 failed: StoreError: connection refused$/)
    const unexpected = formatEvent({ ...expected, error: new Error('boom'), expected: false })
    expect(unexpected).not.toContain('\n')
    expect(unexpected).toContain('id=req-1')
    expect(JSON.parse(jsonEvent(expected))).toMatchObject({ level: 'warn', request_id: 'req-1' })
    expect(
      formatEvent({ kind: 'request', method: 'GET', path: '/', status: 200, ms: 1, requestId: 'r2' }),
    ).toMatch(/GET \/ 200 1\.0ms id=r2$/)
  })

  it('answers X-Request-Id: the one sent when it is plain, else a new one', async () => {
    const { call, events } = await setup({ runner: null })
    const given = await call('GET', '/healthz', { headers: { 'x-request-id': 'abc-123' } })
    expect(given.headers.get('x-request-id')).toBe('abc-123')
    const forged = await call('GET', '/healthz', { headers: { 'x-request-id': 'a b\tc' } })
    expect(forged.headers.get('x-request-id')).toMatch(/^[A-Za-z0-9_-]{21}$/)
    const tooLong = await call('GET', '/healthz', { headers: { 'x-request-id': 'a'.repeat(129) } })
    expect(tooLong.headers.get('x-request-id')).toMatch(/^[A-Za-z0-9_-]{21}$/)
    const longest = await call('GET', '/healthz', { headers: { 'x-request-id': 'a'.repeat(128) } })
    expect(longest.headers.get('x-request-id')).toBe('a'.repeat(128))
    expect(events.map((e) => e.requestId)).toEqual([
      'abc-123',
      forged.headers.get('x-request-id'),
      tooLong.headers.get('x-request-id'),
      'a'.repeat(128),
    ])
  })
})

describe('bad options', () => {
  it('--port abc fails before the master key file (or anything) is written', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tokenvault-opts-'))
    try {
      const cli = start(['serve', '--port', 'abc', '--store', `file:${join(dir, 'store')}`], dir)
      const [code] = await cli.exited
      expect(code).toBe(2)
      expect(cli.stderr()).toContain('--port (PORT) must be a whole number')
      expect(existsSync(join(dir, '.tokenvault.key'))).toBe(false)
      expect(await readdir(dir)).toEqual([])
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('--cors-origin must be * or an origin', async () => {
    const cli = start(['serve', '--port', '0', '--store', 'memory', '--cors-origin', 'not-a-url'])
    expect((await cli.exited)[0]).toBe(2)
    expect(cli.stderr()).toContain('--cors-origin (TOKENVAULT_CORS_ORIGINS) must be * or an origin')
    for (const ok of ['*', 'https://app.example.com', 'http://localhost:5173', 'https://app.example.com/'])
      expect(isCorsOrigin(ok), ok).toBe(true)
    for (const bad of [
      'not-a-url',
      'https://app.example.com/path',
      'ftp://x.example',
      'https://a.example?x=1',
      '',
    ])
      expect(isCorsOrigin(bad), bad).toBe(false)
  })

  it('a missing pg says what to install', () => {
    const error = Object.assign(new Error("Cannot find package 'pg' imported from /app/dist/bin/stores.js"), {
      code: 'ERR_MODULE_NOT_FOUND',
    })
    expect(explainStartError(error)).toBe('the postgres store needs the pg package: npm i pg')
    const other = Object.assign(new Error("Cannot find package 'left-pad'"), { code: 'ERR_MODULE_NOT_FOUND' })
    expect(explainStartError(other)).toBe("Cannot find package 'left-pad'")
  })
})
