/**
 * The file store keeps a sealed token's ciphertext as bytes (`tokenCodec`): smaller than its
 * base64, read back as bytes the sealed store opens, equal to itself for `token.unchanged`, and
 * base64 again in a dump. Anything else stays JSON.
 */
import { randomBytes } from 'node:crypto'
import { open as openLmdb } from 'lmdb'
import { describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { key } from '../../adapters/file/keys.js'
import { tokenCodec } from '../../adapters/file/token-codec.js'
import { createService, manualClock } from '../../entry/index.js'
import type { StoredToken } from '../../src/kernel/types.js'
import { put, T, token } from './fixtures.js'
import { tempDir } from './helpers.js'

const sealedToken = (bytes: Buffer): StoredToken =>
  token('sealed', { data: { $sealed: bytes.toString('base64') }, metadata: { owner: 'ann' } })

describe('tokenCodec', () => {
  it('keeps a sealed token as its head in JSON and its ciphertext as bytes', () => {
    const ciphertext = randomBytes(1024)
    const t = sealedToken(ciphertext)
    const encoded = tokenCodec.encode(t)
    expect(encoded[0]).toBe(0x01)
    // The ciphertext is there as it is, not as its base64 (a third longer).
    expect(encoded.includes(ciphertext)).toBe(true)
    expect(encoded.length).toBeLessThan(Buffer.byteLength(JSON.stringify(t)) - 300)
    const decoded = tokenCodec.decode(encoded)
    const { data, ...head } = decoded
    const { data: _data, ...given } = t
    expect(head).toEqual(given)
    const sealed = (data as unknown as { $sealed: Uint8Array }).$sealed
    expect(sealed).toBeInstanceOf(Uint8Array)
    expect(Buffer.from(sealed).equals(ciphertext)).toBe(true)
    // Read back and written again, the bytes are the same.
    expect(tokenCodec.encode(decoded).equals(encoded)).toBe(true)
  })

  it('keeps as JSON a token whose data is not sealed, or whose base64 would not come back the same', () => {
    const plain = token('plain', { data: { number: '4242424242424242' } })
    const padded = token('odd', { data: { $sealed: 'QUJD' } }) // canonical: kept as bytes
    const odd = token('odd', { data: { $sealed: 'QUJ' } }) // not canonical base64: kept as written
    const extra = token('extra', { data: { $sealed: 'QUJD', more: 1 } })
    for (const t of [plain, odd, extra]) {
      const encoded = tokenCodec.encode(t)
      expect(encoded.toString('utf8')).toBe(JSON.stringify(t))
      expect(tokenCodec.decode(encoded)).toEqual(t)
    }
    expect(tokenCodec.encode(padded)[0]).toBe(0x01)
  })

  it('keeps as bytes exactly the base64 that its bytes give back, as the round trip decides', () => {
    // Valid base64 mutated one to three times (a character put in, taken out or changed), seeded:
    // each is kept as bytes only when decoding and encoding again gives the same text.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
    const extra = ['=', '==', '-', '_', ' ', '\n', '*', 'é', '\0', 'A', '/', '+', '\u2028', '%', '.']
    let seed = 7
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return (seed >>> 12) % n
    }
    let asBytes = 0
    for (let i = 0; i < 20000; i++) {
      let text = Buffer.from(Array.from({ length: next(9) }, () => next(256))).toString('base64')
      for (let j = next(4); j > 0; j--) {
        const at = next(text.length + 1)
        const how = next(3)
        const put = how === 0 ? extra[next(extra.length)]! : how === 1 ? '' : alphabet[next(64)]!
        text = text.slice(0, at) + put + text.slice(at + (how === 0 ? 0 : 1))
      }
      const exact = Buffer.from(text, 'base64').toString('base64') === text
      const encoded = tokenCodec.encode(token('x', { data: { $sealed: text } }))
      expect(encoded[0] === 0x01, JSON.stringify(text)).toBe(exact)
      if (exact) asBytes++
    }
    // Both kinds were met often enough for the comparison to mean something.
    expect(asBytes).toBeGreaterThan(2000)
    expect(asBytes).toBeLessThan(18000)
  })

  it('refuses a record cut short with a corrupt StoreError, not a parse of what follows', () => {
    const encoded = tokenCodec.encode(sealedToken(randomBytes(100)))
    const headLength = encoded.readUInt32LE(1)
    expect(() => tokenCodec.decode(encoded.subarray(0, 5 + headLength - 1))).toThrow(
      expect.objectContaining({ code: 'corrupt' }),
    )
    expect(() => tokenCodec.decode(encoded.subarray(0, 3))).toThrow(
      expect.objectContaining({ code: 'corrupt' }),
    )
  })

  it("reads only the value's bytes from a longer reused buffer", () => {
    const t = sealedToken(randomBytes(100))
    const encoded = tokenCodec.encode(t)
    const reused = Buffer.alloc(encoded.length + 64, 0xff)
    encoded.copy(reused)
    const decoded = tokenCodec.decode(reused, encoded.length)
    expect(tokenCodec.encode(decoded).equals(encoded)).toBe(true)
    // And the copy out does not change when the buffer is reused for the next value.
    reused.fill(0)
    expect(tokenCodec.encode(decoded).equals(encoded)).toBe(true)
    const json = Buffer.from(JSON.stringify(token('plain')))
    const longer = Buffer.concat([json, Buffer.from('garbage')])
    expect(tokenCodec.decode(longer, json.length)).toEqual(token('plain'))
  })
})

describe('the file store with tokens kept as bytes', () => {
  it('answers the bytes, holds token.unchanged on them, and dumps base64 as written', async () => {
    const store = await fileStore({ path: await tempDir() })
    const base64 = randomBytes(200).toString('base64')
    await store.write({ ops: [put('a', { data: { $sealed: base64 } })] })
    const read = (await store.getToken(T, 'a'))!
    const sealed = (read.data as unknown as { $sealed: unknown }).$sealed
    expect(Buffer.from(sealed as Uint8Array).toString('base64')).toBe(base64)
    const unchanged = { check: 'token.unchanged', tenant_id: T, id: 'a', token: read } as const
    expect(await store.write({ checks: [unchanged], ops: [] })).toEqual({ ok: true })
    await store.write({ ops: [put('a', { data: { $sealed: randomBytes(200).toString('base64') } })] })
    expect(await store.write({ checks: [unchanged], ops: [] })).toEqual({ ok: false, failed: unchanged })
    const dump = await store.dump()
    expect(typeof (dump.tokens[0]!.data as { $sealed: unknown }).$sealed).toBe('string')
    await store.close()
  })

  it('serves tokens through the service as before, and after a reopen', async () => {
    const path = await tempDir()
    const masterKey = randomBytes(32)
    const open = async () => {
      const service = createService({ store: await fileStore({ path }), clock: manualClock(), masterKey })
      return service
    }
    let service = await open()
    const tenant = await service.admin.createTenant({ name: 't' })
    const perms = ['token:create', 'token:read', 'token:update']
    const { key } = await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'a',
      type: 'private',
      permissions: perms,
      rules: [{ description: 'all', priority: 1, container: '/', transform: 'reveal', permissions: perms }],
    } as never)
    const data = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 }
    const created = await service.connect(key).tokens.create({ type: 'card', data })
    // An update reads the token and guards its write with token.unchanged on what it read.
    await service.connect(key).tokens.update(created.id, { metadata: { owner: 'bo' } })
    await service.close()
    service = await open()
    const got = await service.connect(key).tokens.get(created.id)
    expect(got.data).toEqual(data)
    expect(got.metadata).toEqual({ owner: 'bo' })
    await service.close()
  })
})

describe('a store of the format before (tokens all JSON)', () => {
  it('opens, reads its tokens as they are, and moves its marker on so older versions refuse it', async () => {
    const path = await tempDir()
    await (await fileStore({ path, durability: 'none' })).close()
    // As the format before wrote it: marker 2, a token as JSON with its ciphertext in base64.
    const old = sealedToken(randomBytes(64))
    const raw = openLmdb({ path, keyEncoding: 'binary', encoding: 'json', maxDbs: 30 })
    const meta = raw.openDB({ name: 'meta', keyEncoding: 'binary', encoding: 'json' })
    await meta.put(Buffer.from('format'), 2)
    await raw.openDB({ name: 'tokens', keyEncoding: 'binary', encoding: 'json' }).put(key(T, old.id), old)
    await raw.close()

    const store = await fileStore({ path, durability: 'none' })
    expect(await store.getToken(T, old.id)).toEqual(old)
    await store.write({ ops: [put('new', { data: { $sealed: randomBytes(64).toString('base64') } })] })
    await store.close()
    const after = openLmdb({ path, keyEncoding: 'binary', encoding: 'json', maxDbs: 30 })
    expect(
      after.openDB({ name: 'meta', keyEncoding: 'binary', encoding: 'json' }).get(Buffer.from('format')),
    ).toBe(3)
    await after.close()
  })
})
