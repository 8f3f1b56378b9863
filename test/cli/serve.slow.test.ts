import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync, statSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { root, start } from './spawn.js'

// Each case spawns the CLI (some several times): a machine whose cores are busy may need a minute.
describe('tokenvault serve', { timeout: 120_000 }, () => {
  it('prints where it listens and the management key, serves the API, logs requests, exits 0 on SIGTERM', async () => {
    const cli = start(['serve', '--port', '0', '--store', 'memory'])
    const listening = await cli.line(1)
    expect(listening).toMatch(/^listening on http:\/\/127\.0\.0\.1:\d+$/)
    const url = listening.slice('listening on '.length)
    expect(url).not.toMatch(/:0$/)
    const management = (await cli.line(2)).match(/^management key: (key_\S+)$/)?.[1]
    expect(management).toBeDefined()

    const app = await fetch(`${url}/applications`, {
      method: 'POST',
      headers: { 'SVC-API-KEY': management!, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'backend', type: 'private', permissions: ['token:create', 'token:read'] }),
    })
    expect(app.status).toBe(201)
    const { key } = (await app.json()) as { key: string }
    const token = await fetch(`${url}/tokens`, {
      method: 'POST',
      headers: { 'SVC-API-KEY': key, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'card', data: { number: '4242424242424242' } }),
    })
    expect(token.status).toBe(201)
    const { id } = (await token.json()) as { id: string }
    const read = await fetch(`${url}/tokens/${id}?x=1`, { headers: { 'svc-api-key': key } })
    expect(read.status).toBe(200)

    cli.child.kill('SIGTERM')
    const [code, signal] = await cli.exited
    expect({ code, signal }).toEqual({ code: 0, signal: null })
    const log = cli.stderr()
    expect(log).toMatch(/POST \/applications 201 [\d.]+ms/)
    expect(log).toMatch(new RegExp(`GET /tokens/${id} 200 [\\d.]+ms`))
    expect(log).not.toContain('?x=1')
    expect(log).not.toContain(key)
    expect(log).not.toContain(management)
    expect(log).not.toContain('4242')
    // Then the next steps: which header, a first request, where the docs are.
    expect(cli.lines.slice(2)).toEqual([
      'api key header: SVC-API-KEY (or BT-API-KEY, as the Basis Theory SDKs send)',
      `try: curl -H 'SVC-API-KEY: ${management}' ${url}/applications`,
      `docs: ${url}/openapi.json (OpenAPI 3.1); options: tokenvault --help; guide: README.md`,
    ])
    // Every request line carries its request id, the one answered as X-Request-Id.
    expect(read.headers.get('x-request-id')).toMatch(/^[A-Za-z0-9_-]{21}$/)
    expect(log).toContain(`GET /tokens/${id} 200`)
    expect(log).toMatch(new RegExp(`GET /tokens/${id} 200 [\\d.]+ms id=${read.headers.get('x-request-id')}`))
  })

  it('prints the management key only on the first start of a file store; SIGINT exits 0', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tokenvault-cli-'))
    try {
      const store = `file:${join(dir, 'vault')}`
      const first = start(['serve', '--port', '0', '--store', store, '--header-prefix', 'BT'], dir)
      const url = (await first.line(1)).slice('listening on '.length)
      const management = (await first.line(2)).slice('management key: '.length)
      const ok = await fetch(`${url}/applications`, { headers: { 'bt-api-key': management } })
      expect(ok.status).toBe(200)
      first.child.kill('SIGINT')
      expect((await first.exited)[0]).toBe(0)

      // The master key was created in the working directory, readable by its owner only.
      expect(first.stderr()).toMatch(/master key: created .*\.tokenvault\.key \(0600\)/)
      const keyFile = join(dir, '.tokenvault.key')
      expect(statSync(keyFile).mode & 0o777).toBe(0o600)
      const keyText = readFileSync(keyFile, 'utf8').trim()
      expect(first.stderr()).not.toContain(keyText)

      const second = start(['serve', '--port', '0', '--store', store, '--header-prefix', 'BT'], dir)
      const again = (await second.line(1)).slice('listening on '.length)
      // The key from the first start still works; no new one is printed.
      expect((await fetch(`${again}/applications`, { headers: { 'bt-api-key': management } })).status).toBe(
        200,
      )
      second.child.kill('SIGTERM')
      expect((await second.exited)[0]).toBe(0)
      expect(second.lines[1]).toMatch(/^api key header: /)
      expect(second.lines.join('\n')).not.toContain('management key: ')
      expect(second.stderr()).toMatch(/master key: using /)
      expect(readFileSync(keyFile, 'utf8').trim()).toBe(keyText)

      // Another key does not open the store: the server refuses to start, saying which key failed.
      const other = spawn(
        process.execPath,
        [
          '--import',
          import.meta.resolve('tsx'),
          join(root, 'bin/tokenvault.ts'),
          'serve',
          '--port',
          '0',
          '--store',
          store,
        ],
        {
          cwd: dir,
          env: { ...process.env, TOKENVAULT_MASTER_KEY: Buffer.alloc(32, 7).toString('base64') },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      )
      let otherErr = ''
      other.stderr!.on('data', (d) => (otherErr += d))
      const [code] = (await once(other, 'exit')) as [number]
      expect(code).not.toBe(0)
      expect(otherErr).toMatch(/masterKey: .*(could not unwrap|which this service was not given)/)
      expect(otherErr).not.toContain(Buffer.alloc(32, 7).toString('base64'))
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('refuses bad options with exit code 2', async () => {
    const cases = [
      ['serve', '--port', 'x'],
      ['serve', '--port', '70000'],
      ['serve', '--store', 'mongodb://x'],
      ['serve', '--header-prefix', 'a b'],
      ['nope'],
      ['serve', '--bogus'],
    ]
    const codes = await Promise.all(cases.map(async (args) => (await start(args).exited)[0]))
    expect(codes).toEqual(cases.map(() => 2))
  })

  it('takes every option from the environment (flags win), and a stable management key', async () => {
    const key = `key_${'a'.repeat(28)}`
    const cli = start(['serve', '--port', '0'], root, {
      PORT: '1',
      TOKENVAULT_STORE: 'memory',
      TOKENVAULT_HEADER_PREFIX: 'BT',
      TOKENVAULT_MANAGEMENT_KEY: key,
      TOKENVAULT_LOG: 'json',
    })
    // In JSON mode the start lines are JSON too.
    const { url } = JSON.parse(await cli.line(1)) as { url: string }
    expect(url).not.toMatch(/:1$/)
    expect(JSON.parse(await cli.line(2))).toMatchObject({ level: 'info', msg: 'management key', key })
    expect(JSON.parse(await cli.line(3))).toMatchObject({ msg: 'api key header', header: 'BT-API-KEY' })
    const ok = await fetch(`${url}/applications`, { headers: { 'bt-api-key': key } })
    expect(ok.status).toBe(200)
    // No wait: the server logs each request before it exits on SIGTERM.
    cli.child.kill('SIGTERM')
    await cli.exited
    const lines = cli
      .stderr()
      .split('\n')
      .filter((l) => l.startsWith('{'))
    expect(lines.length).toBeGreaterThan(0)
    // Nothing but JSON on stderr in JSON mode.
    expect(
      cli
        .stderr()
        .split('\n')
        .filter((l) => l !== '' && !l.startsWith('{')),
    ).toEqual([])
    // The request's line, wherever it falls among the start and stop lines.
    const event = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((e) => e['path'] === '/applications')
    expect(event).toMatchObject({ level: 'info', method: 'GET', path: '/applications', status: 200 })
    expect(event?.['request_id']).toBe(ok.headers.get('x-request-id'))
    expect(cli.stderr()).not.toContain(key)
  })

  it('--log none prints no request line; --version prints the version; --help names every env var', async () => {
    const quiet = start(['serve', '--port', '0', '--store', 'memory', '--log', 'none'])
    const url = (await quiet.line(1)).slice('listening on '.length)
    expect((await fetch(`${url}/healthz`)).status).toBe(200)
    quiet.child.kill('SIGTERM')
    await quiet.exited
    expect(quiet.stderr()).not.toContain('/healthz')

    const version = start(['--version'])
    await version.exited
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }
    expect(version.lines).toEqual([`tokenvault ${pkg.version}`])

    const help = start(['--help'])
    await help.exited
    const text = help.lines.join('\n')
    for (const env of [
      'PORT',
      'HOST',
      'TOKENVAULT_STORE',
      'TOKENVAULT_HEADER_PREFIX',
      'TOKENVAULT_CORS_ORIGINS',
      'TOKENVAULT_REACTOR_EGRESS',
      'TOKENVAULT_MANAGEMENT_KEY',
      'TOKENVAULT_LOG',
      'TOKENVAULT_MASTER_KEY',
    ]) {
      expect(text).toContain(env)
    }
  })

  it('refuses bad environment values with exit code 2 and a clear line', async () => {
    const cases: Record<string, string>[] = [
      { PORT: 'eighty' },
      { TOKENVAULT_STORE: 'mongodb://x' },
      { TOKENVAULT_LOG: 'verbose' },
      { TOKENVAULT_MANAGEMENT_KEY: 'short' },
      { TOKENVAULT_REACTOR_EGRESS: 'https://api.example.com,ftp://files.example.com' },
    ]
    for (const env of cases) {
      // Without --store the environment's store applies; the other cases run on memory.
      const args = env['TOKENVAULT_STORE'] ? ['serve'] : ['serve', '--store', 'memory']
      const cli = start(args, root, env)
      const [code] = await cli.exited
      expect(code, JSON.stringify(env)).toBe(2)
      expect(cli.stderr()).toContain(Object.keys(env)[0]!)
    }
  })
})
