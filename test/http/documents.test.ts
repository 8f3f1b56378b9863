/**
 * Documents over HTTP (`/documents`, multipart upload, binary download) on a real socket: a 10 MiB
 * upload interleaves with other requests (counted, not timed), the size bound at its literal numbers
 * (10 485 760 bytes kept, one more a 400, a body past 10 551 296 bytes a 413), and hostile forms.
 */
import { once } from 'node:events'
import { createServer } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHttpHandler, toNodeListener } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock, type Service } from '../../entry/index.js'

let service: Service
const store = memoryStore()
let server: ReturnType<typeof createServer>
let url: string
let key: string
let otherKey: string

beforeAll(async () => {
  service = createService({ store, clock: manualClock('2030-01-01T00:00:00.000Z'), runner: null })
  const tenant = await service.admin.createTenant({ name: 'docs' })
  const other = await service.admin.createTenant({ name: 'other' })
  const all = ['documents:create', 'documents:read', 'documents:reveal', 'documents:delete'] as const
  key = (
    await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'p',
      type: 'private',
      permissions: [...all],
    })
  ).key
  otherKey = (
    await service.admin.createApplication({
      tenantId: other.id,
      name: 'o',
      type: 'private',
      permissions: ['token:read'],
    })
  ).key
  server = createServer(toNodeListener(createHttpHandler(service, { headerPrefix: 'BT', log: () => {} })))
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('no port')
  url = `http://127.0.0.1:${address.port}`
})
afterAll(async () => {
  server.closeAllConnections()
  server.close()
  await service.close()
})

const upload = (form: FormData, apiKey = key) =>
  fetch(`${url}/documents`, { method: 'POST', headers: { 'BT-API-KEY': apiKey }, body: form })

const formOf = (bytes: Uint8Array, type = 'application/octet-stream', request?: string) => {
  const form = new FormData()
  form.append('document', new Blob([bytes], { type }), 'file.bin')
  if (request !== undefined) form.append('request', request)
  return form
}

describe('documents over HTTP', () => {
  it('answers other requests while a 10 MiB document uploads and downloads (counted, never timed)', async () => {
    const bytes = new Uint8Array(10_485_760)
    for (let i = 0; i < bytes.length; i += 4096) bytes[i] = i & 0xff
    let ticks = 0
    let stop = false
    const ticking = (async () => {
      while (!stop) {
        await new Promise((resolve) => setImmediate(resolve))
        ticks++
      }
    })()
    let answered = 0
    let done = false
    const others = (async () => {
      while (!done) {
        const r = await fetch(`${url}/tokens/missing`, { headers: { 'BT-API-KEY': otherKey } }).catch(
          () => null,
        )
        await r?.arrayBuffer()
        if (r?.status === 404) answered++
      }
    })()
    const response = await upload(formOf(bytes, 'application/pdf'))
    const answeredDuringUpload = answered
    expect(response.status).toBe(201)
    const made = (await response.json()) as { id: string }
    const beforeDownload = answered
    const data = await fetch(`${url}/documents/${made.id}/data`, { headers: { 'BT-API-KEY': key } })
    expect(data.status).toBe(200)
    expect(data.headers.get('content-type')).toBe('application/pdf')
    expect(data.headers.get('x-content-type-options')).toBe('nosniff')
    expect(Buffer.from(await data.arrayBuffer()).equals(Buffer.from(bytes))).toBe(true)
    const answeredDuringDownload = answered - beforeDownload
    done = true
    stop = true
    await Promise.all([others, ticking])
    // 160 chunks were sealed a turn apart: other tenants' requests and the loop's turns ran between them.
    expect(answeredDuringUpload).toBeGreaterThanOrEqual(10)
    expect(ticks).toBeGreaterThanOrEqual(160)
    // The download is written as its chunks are opened, one per pull: others' requests run between.
    expect(answeredDuringDownload).toBeGreaterThanOrEqual(10)
    expect(data.headers.get('content-length')).toBe('10485760')
  }, 60_000)

  it('keeps a document of 10 485 760 bytes; 10 485 761 is a 400 and keeps nothing', async () => {
    const at = await upload(formOf(new Uint8Array(10_485_760)))
    expect(at.status).toBe(201)
    const before = await store.dump()
    const past = await upload(formOf(new Uint8Array(10_485_761)))
    expect(past.status).toBe(400)
    expect(((await past.json()) as { detail: string }).detail).toBe(
      'document: must be at most 10485760 bytes',
    )
    expect(await store.dump()).toEqual(before)
  }, 60_000)

  it('answers 413 for a body declared past 10 551 296 bytes, before reading it', async () => {
    const r = await fetch(`${url}/documents`, {
      method: 'POST',
      headers: {
        'BT-API-KEY': key,
        'content-type': 'multipart/form-data; boundary=x',
        'content-length': '10551297',
      },
      body: new Uint8Array(10),
      duplex: 'half',
    } as RequestInit).catch((error: unknown) => error)
    // The server answers 413 and closes; a client still sending may see the reset instead.
    if (r instanceof Response) expect(r.status).toBe(413)
  })

  it('refuses hostile forms with a clear 4xx: not multipart, unknown parts, a second document, bad request JSON', async () => {
    const json = await fetch(`${url}/documents`, {
      method: 'POST',
      headers: { 'BT-API-KEY': key, 'content-type': 'application/json' },
      body: '{}',
    })
    expect(json.status).toBe(415)
    const extra = formOf(new Uint8Array([1]))
    extra.append('other', 'x')
    expect((await upload(extra)).status).toBe(400)
    const two = formOf(new Uint8Array([1]))
    two.append('document', new Blob([new Uint8Array([2])]), 'b.bin')
    expect((await upload(two)).status).toBe(400)
    expect((await upload(formOf(new Uint8Array([1]), 'text/plain', 'not json'))).status).toBe(400)
    expect((await upload(formOf(new Uint8Array([1]), 'text/plain', '{"metadata":{"a":1}}'))).status).toBe(400)
    // Parts with no name (a file's, a field's): a 400 (a file part's threw: a 500).
    for (const disposition of ['form-data', 'form-data; filename="a.txt"', 'form-data; name*=x']) {
      const nameless = await fetch(`${url}/documents`, {
        method: 'POST',
        headers: { 'BT-API-KEY': key, 'content-type': 'multipart/form-data; boundary=XB' },
        body: `--XB\r\nContent-Disposition: ${disposition}\r\n\r\nhello\r\n--XB--\r\n`,
      })
      expect(nameless.status, disposition).toBe(400)
    }
    const ok = await upload(formOf(new Uint8Array([1]), 'text/plain', '{"metadata":{"a":"b"}}'))
    expect(ok.status).toBe(201)
    expect(await ok.json()).toMatchObject({ metadata: { a: 'b' }, content_type: 'text/plain' })
  })
})
