/**
 * The master key that was once committed to the repository: the CLI refuses to serve with it, and
 * `tokenvault keys rotate-master` moves a store sealed under it to a fresh key.
 */
import { execFileSync, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { storeStopped } from '../../bin/keys.js'
import { isPublishedKey } from '../../bin/master-key.js'
import { createService, systemClock } from '../../entry/index.js'
import { tempDir } from '../file/helpers.js'
import { root, start } from './spawn.js'

/** The published key, read back from the commit that added it (it is not in the tree any more). */
function publishedKey(): string {
  return execFileSync('git', ['show', '539b142:.tokenvault.key'], { cwd: root }).toString('utf8')
}

async function run(args: string[], cwd: string, env: Record<string, string> = {}) {
  const cli = start(args, cwd, env)
  const [code] = await cli.exited
  return { code, out: cli.lines.join('\n'), err: cli.stderr() }
}

/** A file store in `dir` sealed under `key`, holding one token; answers its id and a key that reveals it. */
async function storeWithToken(dir: string, key: Buffer): Promise<{ id: string; apiKey: string }> {
  const service = createService({
    store: await fileStore({ path: dir }),
    clock: systemClock,
    runner: null,
    masterKey: key,
  })
  const tenant = await service.admin.createTenant({ name: 't' })
  const { key: apiKey } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'app',
    type: 'private',
    permissions: ['token:create', 'token:read'],
    rules: [
      {
        description: 'all',
        priority: 1,
        container: '/',
        transform: 'reveal',
        permissions: ['token:create', 'token:read'],
      },
    ],
  })
  const token = await service.connect(apiKey).tokens.create({ type: 'token', data: 'secret-value' })
  await service.close()
  return { id: token.id, apiKey }
}

/** Whether `key` alone opens every tenant of the file store in `dir`. */
async function opens(dir: string, key: Buffer): Promise<boolean> {
  const service = createService({
    store: await fileStore({ path: dir }),
    clock: systemClock,
    runner: null,
    masterKey: key,
  })
  try {
    await service.admin.verifyMasterKey()
    return true
  } catch {
    return false
  } finally {
    await service.close()
  }
}

describe('the published master key', () => {
  it('is known by its id, and no other key is', () => {
    const published = Buffer.from(publishedKey().trim(), 'base64')
    expect(published).toHaveLength(32)
    expect(isPublishedKey(published)).toBe(true)
    expect(isPublishedKey(randomBytes(32))).toBe(false)
  })

  it('serve refuses it (exit 2, naming the rotate command) before anything is written', async () => {
    const dir = await tempDir()
    writeFileSync(join(dir, '.tokenvault.key'), publishedKey(), { mode: 0o600 })
    const refused = await run(['serve', '--port', '0', '--store', `file:${join(dir, 'store')}`], dir)
    expect(refused.code).toBe(2)
    expect(refused.err).toContain('published')
    expect(refused.err).toContain('keys rotate-master')
    expect(existsSync(join(dir, 'store'))).toBe(false)
    const fromEnv = await run(['serve', '--port', '0', '--store', `file:${join(dir, 'store')}`], dir, {
      TOKENVAULT_MASTER_KEY: publishedKey().trim(),
    })
    expect(fromEnv.code).toBe(2)
    expect(fromEnv.err).toContain('TOKENVAULT_MASTER_KEY')
  }, 30_000)
})

describe('tokenvault keys rotate-master', () => {
  it('moves a store from the default key file to a fresh key; the old key is kept as .old and opens nothing now', async () => {
    const dir = await tempDir()
    const old = Buffer.from(publishedKey().trim(), 'base64')
    writeFileSync(join(dir, '.tokenvault.key'), publishedKey(), { mode: 0o600 })
    const store = join(dir, 'store')
    const { id, apiKey } = await storeWithToken(store, old)
    const rotated = await run(['keys', 'rotate-master', '--store', `file:${store}`], dir)
    expect(rotated.err).toBe('')
    expect(rotated.code).toBe(0)
    expect(rotated.out).toMatch(/rotated the master key of 1 tenant\(s\) to key id local:[0-9a-f]{16}/)
    const fresh = Buffer.from(readFileSync(join(dir, '.tokenvault.key'), 'utf8').trim(), 'base64')
    expect(fresh).toHaveLength(32)
    expect(fresh.equals(old)).toBe(false)
    expect(statSync(join(dir, '.tokenvault.key')).mode & 0o777).toBe(0o600)
    expect(readFileSync(join(dir, '.tokenvault.key.old'), 'utf8')).toBe(publishedKey())
    expect(existsSync(join(dir, '.tokenvault.key.new'))).toBe(false)
    expect(await opens(store, fresh)).toBe(true)
    expect(await opens(store, old)).toBe(false)
    const service = createService({
      store: await fileStore({ path: store }),
      clock: systemClock,
      runner: null,
      masterKey: fresh,
    })
    expect((await service.connect(apiKey).tokens.get(id)).data).toBe('secret-value')
    await service.close()
  }, 30_000)

  it('uses a given new key file that exists, resumes a rotation cut short, and refuses a missing old key', async () => {
    const dir = await tempDir()
    const old = randomBytes(32)
    const next = randomBytes(32)
    writeFileSync(join(dir, 'old.key'), old.toString('base64'))
    writeFileSync(join(dir, 'next.key'), next.toString('base64'))
    const store = join(dir, 'store')
    await storeWithToken(store, old)
    const args = [
      'keys',
      'rotate-master',
      '--store',
      `file:${store}`,
      '--master-key-file',
      join(dir, 'old.key'),
    ]
    const done = await run([...args, '--new-master-key-file', join(dir, 'next.key')], dir)
    expect(done.code).toBe(0)
    expect(done.out).toContain(`read in ${join(dir, 'next.key')}`)
    expect(await opens(store, next)).toBe(true)
    // Again (as after a crash between re-wrapping and the message): nothing left to re-wrap, still fine.
    const again = await run([...args, '--new-master-key-file', join(dir, 'next.key')], dir)
    expect(again.code).toBe(0)
    expect(again.out).toContain('of 0 tenant(s)')
    const missing = await run(['keys', 'rotate-master', '--store', `file:${store}`], dir)
    expect(missing.code).not.toBe(0)
    expect(missing.err).toContain('the current master key')
    expect(existsSync(join(dir, '.tokenvault.key'))).toBe(false)
  }, 30_000)

  it.runIf(process.platform === 'linux')(
    'refuses a file store another process has open, naming it, and changes nothing; once it is closed, rotates',
    async () => {
      const dir = await tempDir()
      const old = randomBytes(32)
      writeFileSync(join(dir, '.tokenvault.key'), old.toString('base64'), { mode: 0o600 })
      const store = join(dir, 'store')
      await storeWithToken(store, old)
      // This process keeps the store open, as a server would.
      const held = createService({
        store: await fileStore({ path: store }),
        clock: systemClock,
        runner: null,
        masterKey: old,
      })
      await held.admin.verifyMasterKey()
      const refused = await run(['keys', 'rotate-master', '--store', `file:${store}`], dir)
      expect(refused.code).toBe(2)
      expect(refused.err).toContain(`is open in process ${process.pid}`)
      expect(readFileSync(join(dir, '.tokenvault.key'), 'utf8')).toBe(old.toString('base64'))
      expect(existsSync(join(dir, '.tokenvault.key.new'))).toBe(false)
      await held.close()
      expect(await opens(store, old)).toBe(true)
      const rotated = await run(['keys', 'rotate-master', '--store', `file:${store}`], dir)
      expect(rotated.err).toBe('')
      expect(rotated.code).toBe(0)
      expect(await opens(store, old)).toBe(false)
    },
    30_000,
  )

  it.runIf(process.platform === 'linux')(
    'names a process that opened the file store while the rotation ran, once it has ended',
    async () => {
      const dir = await tempDir()
      const store = join(dir, 'store')
      await storeWithToken(store, randomBytes(32))
      const warned: string[] = []
      const ended = await storeStopped(`file:${store}`, (line) => warned.push(line))
      // A process opens the store after the check, as a server started during the rotation would.
      const opener = spawn(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `import { open } from 'lmdb'; open({ path: ${JSON.stringify(store)}, maxDbs: 64 }); console.log('open'); setInterval(() => {}, 1000)`,
        ],
        { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] },
      )
      try {
        await new Promise<void>((resolve) => opener.stdout!.once('data', () => resolve()))
        await ended()
        expect(warned).toEqual([
          `process ${opener.pid} opened file:${store} during the rotation: restart it with the new master key`,
        ])
      } finally {
        const exited = new Promise((resolve) => opener.once('exit', resolve))
        opener.kill()
        await exited
      }
      const quiet: string[] = []
      await (await storeStopped(`file:${store}`, (line) => quiet.push(line)))()
      expect(quiet).toEqual([])
    },
    30_000,
  )
})
