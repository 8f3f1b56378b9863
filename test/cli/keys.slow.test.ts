import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { tempDir } from '../file/helpers.js'
import { start } from './spawn.js'

const KEY = Buffer.alloc(32, 9).toString('base64')
const OTHER = Buffer.alloc(32, 8).toString('base64')

/** Runs the CLI to its end; answers its exit code and output. */
async function run(args: string[], env: Record<string, string>) {
  const cli = start(args, undefined, env)
  const [code] = await cli.exited
  return { code, out: cli.lines.join('\n'), err: cli.stderr() }
}

describe('tokenvault keys create', () => {
  it('mints a new management key for an existing store, also while a server has it open (it takes the key at once); refused with a wrong master key or an unknown tenant', async () => {
    const dir = join(await tempDir(), 'store')
    const env = { TOKENVAULT_MASTER_KEY: KEY }
    const server = start(['serve', '--port', '0', '--store', `file:${dir}`, '--log', 'none'], undefined, env)
    const url = (await server.line(1)).slice('listening on '.length)
    const first = (await server.line(2)).slice('management key: '.length)
    const beside = await run(['keys', 'create', '--store', `file:${dir}`], env)
    expect(beside.code).toBe(0)
    const besideKey = /management key: (key_\S+)/.exec(beside.out)?.[1]
    expect(besideKey).toMatch(/^key_/)
    expect((await fetch(`${url}/applications`, { headers: { 'SVC-API-KEY': besideKey! } })).status).toBe(200)
    server.child.kill('SIGTERM')
    await server.exited

    const made = await run(['keys', 'create', '--store', `file:${dir}`], env)
    expect(made.code).toBe(0)
    const key = /management key: (key_\S+)/.exec(made.out)?.[1]
    expect(key).toBeDefined()
    expect(key).not.toBe(first)
    expect(
      (await run(['keys', 'create', '--store', `file:${dir}`], { TOKENVAULT_MASTER_KEY: OTHER })).err,
    ).toMatch(/masterKey|master key/)
    expect((await run(['keys', 'create', '--store', `file:${dir}`, '--tenant', 'nope'], env)).err).toMatch(
      /no tenant nope/,
    )

    const again = start(['serve', '--port', '0', '--store', `file:${dir}`, '--log', 'none'], undefined, env)
    const url2 = (await again.line(1)).slice('listening on '.length)
    expect(url2).toMatch(/^http:/)
    const apps = await fetch(`${url2}/applications`, { headers: { 'SVC-API-KEY': key! } })
    expect(apps.status).toBe(200)
    const body = (await apps.json()) as { data: { type: string }[] }
    expect(body.data.filter((a) => a.type === 'management')).toHaveLength(3)
    again.child.kill('SIGTERM')
    await again.exited
  }, 60_000)
})
