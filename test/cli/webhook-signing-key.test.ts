/**
 * The CLI's webhook signing key: kept in ./.tokenvault-webhook-signing.pem for a file or PostgreSQL
 * store (made once, 0600, shared by every process started there), never the published test key
 * outside test mode; and the service refusing the published key with a persistent store.
 */
import { execFile } from 'node:child_process'
import { createPrivateKey, generateKeyPairSync, randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterEach, describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { loadSigningKey, publicKeyOf } from '../../bin/signing-key.js'
import { createService, manualClock } from '../../entry/index.js'
import { TEST_WEBHOOK_PRIVATE_KEY, TEST_WEBHOOK_PUBLIC_KEY } from '../../src/webhooks/index.js'
import { root } from './spawn.js'

const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tv-signing-'))
  dirs.push(dir)
  return dir
}

describe('the CLI keeps its webhook signing key in a file', () => {
  it('made on first start (RSA, 0600) and read on the next: the same key, its public half printed', () => {
    const file = join(tempDir(), 'signing.pem')
    const first = loadSigningKey({ defaultFile: file, create: true })
    expect(first.note).toMatch(/^webhook signing key: created .*signing\.pem \(0600\)/)
    expect(statSync(file).mode & 0o777).toBe(0o600)
    // A PKCS #8 private key in PEM (its armour line is spelt out here only in part).
    expect(first.pem.startsWith(`-----BEGIN ${'PRIVATE'} KEY`)).toBe(true)
    const second = loadSigningKey({ defaultFile: file, create: true })
    expect(second.note).toMatch(/^webhook signing key: using /)
    expect(second.pem).toBe(first.pem)
    expect(loadSigningKey({ defaultFile: file, create: false }).pem).toBe(first.pem)
    expect(publicKeyOf(first.pem)).toMatch(/^-----BEGIN PUBLIC KEY-----/)
    // Nothing but the key file is left in its directory (the staging file is removed).
    expect(readFileSync(file, 'utf8')).toBe(first.pem)
  })

  it('a missing default file is an error when not to be created, naming the file and the flag', () => {
    const file = join(tempDir(), 'absent.pem')
    expect(() => loadSigningKey({ defaultFile: file, create: false })).toThrow(
      /no webhook signing key at .*absent\.pem.*--webhook-signing-key-file/,
    )
  })

  it('refuses the published test key outside test mode, however the file writes it; takes it in test mode', () => {
    const dir = tempDir()
    const same = join(dir, 'test.pem')
    writeFileSync(same, TEST_WEBHOOK_PRIVATE_KEY)
    expect(() => loadSigningKey({ file: same, defaultFile: '', create: false })).toThrow(
      /published test signing key/,
    )
    // The same key in PKCS #1 form: another text, the same key.
    const pkcs1 = join(dir, 'test-pkcs1.pem')
    writeFileSync(pkcs1, createPrivateKey(TEST_WEBHOOK_PRIVATE_KEY).export({ type: 'pkcs1', format: 'pem' }))
    expect(() => loadSigningKey({ file: pkcs1, defaultFile: '', create: false })).toThrow(/published test/)
    expect(loadSigningKey({ file: same, defaultFile: '', create: false, testMode: true }).pem).toBe(
      TEST_WEBHOOK_PRIVATE_KEY,
    )
    // A default file that holds it is refused too.
    expect(() => loadSigningKey({ defaultFile: same, create: true })).toThrow(/published test/)
  })

  it('refuses a file that holds no RSA private key', () => {
    const dir = tempDir()
    const ec = join(dir, 'ec.pem')
    writeFileSync(
      ec,
      generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }),
    )
    const text = join(dir, 'text.pem')
    writeFileSync(text, 'not a key')
    for (const file of [ec, text])
      expect(() => loadSigningKey({ file, defaultFile: '', create: false })).toThrow(
        /must hold an RSA private key/,
      )
  })

  it('four processes starting at once on one directory end with one key between them', async () => {
    const file = join(tempDir(), 'shared.pem')
    const index = new URL('../../bin/signing-key.ts', import.meta.url).href
    const script = `const { loadSigningKey, publicKeyOf } = await import(${JSON.stringify(index)})
      process.stdout.write(publicKeyOf(loadSigningKey({ defaultFile: ${JSON.stringify(file)}, create: true }).pem))`
    const run = promisify(execFile)
    const outs = await Promise.all(
      [1, 2, 3, 4].map(() =>
        run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
          cwd: root,
          timeout: 60_000,
        }),
      ),
    )
    const keys = new Set(outs.map((o) => o.stdout))
    expect(keys.size).toBe(1)
    expect([...keys][0]).toBe(publicKeyOf(readFileSync(file, 'utf8')))
  }, 90_000)
})

describe('the service and the published test key', () => {
  it('refuses it with a persistent store outside test mode; takes it in test mode and with a memory store', async () => {
    const store = await fileStore({ path: tempDir() })
    try {
      const base = { store, clock: manualClock(), runner: null, masterKey: randomBytes(32) } as const
      expect(() => createService({ ...base, webhookSigningKey: TEST_WEBHOOK_PRIVATE_KEY })).toThrow(
        /`webhookSigningKey` is the published test key/,
      )
      const test = createService({ ...base, webhookSigningKey: TEST_WEBHOOK_PRIVATE_KEY, testMode: true })
      expect(test.admin.webhooks.publicKey.trim()).toBe(TEST_WEBHOOK_PUBLIC_KEY.trim())
      const own = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey
      const pem = own.export({ type: 'pkcs8', format: 'pem' }).toString()
      expect(createService({ ...base, webhookSigningKey: pem }).admin.webhooks.publicKey).toBe(
        publicKeyOf(pem),
      )
    } finally {
      await store.close()
    }
    const memory = createService({
      store: memoryStore(),
      clock: manualClock(),
      runner: null,
      webhookSigningKey: TEST_WEBHOOK_PRIVATE_KEY,
    })
    expect(memory.admin.webhooks.publicKey.trim()).toBe(TEST_WEBHOOK_PUBLIC_KEY.trim())
  })
})
