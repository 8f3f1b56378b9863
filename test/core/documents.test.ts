/**
 * Documents (`client.documents`): binary bytes round-trip exactly (every byte value), a document of
 * exactly 10 485 760 bytes is kept and one byte more is refused with nothing kept, another tenant's
 * id answers as unknown, each call needs its `documents:*` permission, reads of the bytes are in
 * the audit log, and the bytes are never in the clear in the file store.
 */
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { createService, manualClock } from '../../entry/index.js'
import { failure, setup } from './setup.js'

/** Every byte value, `rounds` times over, then a tail: not a multiple of 64 KiB. */
const everyByte = (rounds: number) => {
  const out = new Uint8Array(256 * rounds + 7)
  for (let i = 0; i < out.length; i++) out[i] = (i * 7 + (i >> 8)) & 0xff
  return out
}

/** The bytes of a web stream, all read. */
async function drain(stream: ReadableStream<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = []
  for await (const part of stream as unknown as AsyncIterable<Uint8Array>) parts.push(part)
  return Buffer.concat(parts)
}

describe('documents', () => {
  it('round-trips every byte value, across chunk boundaries, with its metadata and media type', async () => {
    const { client, tenant, full } = await setup()
    const bytes = everyByte(1000) // 256 007 bytes: four chunks, the last short
    const made = await client.documents.upload({
      document: bytes,
      content_type: 'application/pdf; charset=binary',
      request: { metadata: { name: 'scan.pdf' } },
    })
    expect(made).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      tenant_id: tenant.id,
      metadata: { name: 'scan.pdf' },
      content_type: 'application/pdf',
      created_by: full.application.id,
      created_at: '2030-01-01T00:00:00.000Z',
    })
    expect(await client.documents.get(made.id)).toEqual(made)
    const data = await client.documents.data(made.id)
    expect(data.content_type).toBe('application/pdf')
    expect(data.size).toBe(256_007)
    expect((await drain(data.body)).equals(Buffer.from(bytes))).toBe(true)
    // Each byte value 0–255 is there.
    expect(new Set(bytes).size).toBe(256)
  })

  it('takes a web stream, an async iterable and a Blob (its own type), in pieces of any size', async () => {
    const { client } = await setup()
    const bytes = everyByte(600)
    const pieces = [bytes.subarray(0, 1), bytes.subarray(1, 70_000), bytes.subarray(70_000)]
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        for (const p of pieces) c.enqueue(p)
        c.close()
      },
    })
    async function* iterable() {
      yield* pieces
    }
    const blob = new Blob([bytes], { type: 'image/png' })
    for (const document of [stream, iterable(), blob]) {
      const made = await client.documents.upload({ document })
      expect(made.content_type).toBe(document === blob ? 'image/png' : 'application/octet-stream')
      expect((await drain((await client.documents.data(made.id)).body)).equals(Buffer.from(bytes))).toBe(true)
    }
  })

  it('keeps a document of exactly 10 485 760 bytes; one byte more is a 400 and keeps nothing', async () => {
    const { client, store } = await setup()
    const atLimit = new Uint8Array(10_485_760).fill(0xa5)
    const made = await client.documents.upload({ document: atLimit })
    expect((await client.documents.data(made.id)).size).toBe(10_485_760)
    const before = await store.dump()
    const error = await failure(client.documents.upload({ document: new Uint8Array(10_485_761) }))
    expect(error.code).toBe('validation_failed')
    expect(error.message).toBe('document: must be at most 10485760 bytes')
    expect(await store.dump()).toEqual(before)
    // A stream that runs past the bound is refused the same way.
    async function* endless() {
      for (;;) yield new Uint8Array(1 << 20)
    }
    expect((await failure(client.documents.upload({ document: endless() }))).code).toBe('validation_failed')
    expect(await store.dump()).toEqual(before)
  })

  it('refuses an empty document, a bad media type and unknown request fields, keeping nothing', async () => {
    const { client, store } = await setup()
    const before = await store.dump()
    expect((await failure(client.documents.upload({ document: new Uint8Array(0) }))).message).toBe(
      'document: must not be empty',
    )
    const bad = await failure(client.documents.upload({ document: new Uint8Array(1), content_type: 'pdf' }))
    expect(bad.code).toBe('validation_failed')
    const extra = await failure(
      client.documents.upload({ document: new Uint8Array(1), request: { tags: 1 } as never }),
    )
    expect(extra.code).toBe('validation_failed')
    expect(await store.dump()).toEqual(before)
  })

  it("answers another tenant's document as unknown, and a deleted one as unknown", async () => {
    const { client, service, keyFor } = await setup()
    const made = await client.documents.upload({ document: new Uint8Array([1, 2, 3]) })
    const other = await service.admin.createTenant({ name: 'other' })
    const theirs = await keyFor(
      'private',
      ['documents:read', 'documents:reveal', 'documents:delete'],
      undefined,
      other.id,
    )
    for (const call of [
      () => theirs.client.documents.get(made.id),
      () => theirs.client.documents.data(made.id),
      () => theirs.client.documents.delete(made.id),
    ])
      expect((await failure(call())).code).toBe('not_found')
    expect((await client.documents.get(made.id)).id).toBe(made.id)
    await client.documents.delete(made.id)
    expect((await failure(client.documents.get(made.id))).code).toBe('not_found')
    expect((await failure(client.documents.data(made.id))).code).toBe('not_found')
    expect((await failure(client.documents.delete(made.id))).code).toBe('not_found')
  })

  it('needs documents:create, documents:read, documents:reveal and documents:delete, each for its call', async () => {
    const { client, keyFor } = await setup()
    const made = await client.documents.upload({ document: new Uint8Array([9]) })
    const none = await keyFor('private', ['token:read'])
    const forbidden = async (p: Promise<unknown>) => (await failure(p)).message
    expect(await forbidden(none.client.documents.upload({ document: new Uint8Array([1]) }))).toBe(
      'missing permission documents:create',
    )
    expect(await forbidden(none.client.documents.get(made.id))).toBe('missing permission documents:read')
    expect(await forbidden(none.client.documents.data(made.id))).toBe('missing permission documents:reveal')
    expect(await forbidden(none.client.documents.delete(made.id))).toBe('missing permission documents:delete')
    // Reading the metadata does not reveal the bytes.
    const reader = await keyFor('private', ['documents:read'])
    expect((await reader.client.documents.get(made.id)).id).toBe(made.id)
    expect(await forbidden(reader.client.documents.data(made.id))).toBe('missing permission documents:reveal')
  })

  it('still reads after a data-key rotation and a finished re-encryption pass: its version is kept', async () => {
    const { client, service, tenant, clock } = await setup()
    const bytes = everyByte(300)
    const made = await client.documents.upload({ document: bytes })
    await service.admin.rotateDataKey({ tenantId: tenant.id })
    clock.advance(60_000)
    const progress = await service.admin.reencrypt({ tenantId: tenant.id, batchSize: 10 })
    expect(progress.finished).toBe(true)
    expect(progress.versions).toEqual([1, 2])
    expect((await drain((await client.documents.data(made.id)).body)).equals(Buffer.from(bytes))).toBe(true)
    // Once the document is gone, the next pass retires the version it held.
    await client.documents.delete(made.id)
    expect((await service.admin.reencrypt({ tenantId: tenant.id, batchSize: 10 })).versions).toEqual([2])
  })

  it('logs each read of the bytes in the audit log, naming the document', async () => {
    const { client, keyFor } = await setup()
    const made = await client.documents.upload({ document: new Uint8Array([1]) })
    await drain((await client.documents.data(made.id)).body)
    const auditor = await keyFor('management', ['log:read'])
    const page = await auditor.client.logs.list({ entity_type: 'document', entity_id: made.id })
    const operations = page.data.map((e: { operation?: string; message?: string }) => e.message)
    expect(operations).toEqual(expect.arrayContaining(['document.data: answered']))
  })

  it('keeps the bytes sealed in the file store (records and data file); the service reads them back', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tokenvault-documents-at-rest-'))
    const CANARY = 'canary-51c0de-document-bytes'
    try {
      const store = await fileStore({ path: dir })
      const service = createService({
        store,
        clock: manualClock(),
        runner: null,
        masterKey: Buffer.alloc(32, 7),
      })
      const tenant = await service.admin.createTenant({ name: 't' })
      const { key } = await service.admin.createApplication({
        tenantId: tenant.id,
        name: 'p',
        type: 'private',
        permissions: ['documents:create', 'documents:reveal'],
      })
      const client = service.connect(key)
      const made = await client.documents.upload({ document: new TextEncoder().encode(CANARY.repeat(5000)) })
      expect((await drain((await client.documents.data(made.id)).body)).toString()).toBe(CANARY.repeat(5000))
      const dump = await store.dump()
      expect(dump.document_chunks.length).toBeGreaterThan(1)
      const text = JSON.stringify(dump)
      for (const needle of [CANARY, Buffer.from(CANARY.repeat(3)).toString('base64').slice(0, 24)])
        expect(text.includes(needle), needle).toBe(false)
      expect(readFileSync(join(dir, 'data.mdb')).includes(Buffer.from(CANARY))).toBe(false)
      await service.close()
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
