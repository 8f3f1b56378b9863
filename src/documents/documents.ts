import * as v from 'valibot'
import { requirePermission } from '../applications/index.js'
import type { Ctx } from '../call/index.js'
import type { StoredDocument, StoredDocumentChunk } from '../kernel/index.js'
import {
  invalid,
  mapKey,
  newId,
  nextTurn,
  notFound,
  parse,
  ServiceError,
  withoutForbiddenKeys,
} from '../kernel/index.js'

/** The most bytes one document holds: 10 MiB. The reference states none; this is ours. */
export const MAX_DOCUMENT_BYTES = 10 * 1024 * 1024

/** The bytes of one stored chunk (each sealed on its own): 64 KiB; the last may be shorter. */
export const DOCUMENT_CHUNK_BYTES = 64 * 1024

/** A document's bytes as `upload` takes them: whole, a web stream, an async iterable, or a Blob. */
export type DocumentSource = Uint8Array | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array> | Blob

/** `upload`'s argument: the SDK's `{ document, request: { metadata } }`, and the bytes' media type. */
export interface DocumentUpload {
  document: DocumentSource
  /** The media type of the bytes (a multipart part's `Content-Type`); a Blob's own type, else `application/octet-stream`. */
  content_type?: string
  request?: { metadata?: Record<string, string> } | null
}

/** A document as answered (`GET /documents/{id}`): the reference's shape. */
export interface ShownDocument {
  id: string
  tenant_id: string
  metadata: Record<string, string>
  content_type: string
  created_by: string
  created_at: string
}

const metadata = v.pipe(
  withoutForbiddenKeys<Record<string, string>>(),
  v.record(mapKey(100), v.pipe(v.string(), v.maxLength(1000, 'must be at most 1000 characters'))),
  v.check((m) => Object.keys(m).length <= 100, 'must hold at most 100 entries'),
)

/** The `request` form field of `POST /documents`: `{ metadata }`, nothing else. */
export const documentRequestInput = v.nullish(v.strictObject({ metadata: v.nullish(metadata) }))

/** A media type (`type/subtype`, RFC 9110 tokens, parameters dropped), lower-cased, ≤ 127 characters. */
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+"
const MEDIA_TYPE = new RegExp(`^${TOKEN}/${TOKEN}$`)

/** The media type a document is kept under: `given` without its parameters, checked. */
export function documentContentType(given: string | undefined): string {
  const type = (given ?? 'application/octet-stream').split(';')[0]!.trim().toLowerCase()
  if (type.length > 127 || !MEDIA_TYPE.test(type))
    throw invalid('document', 'its content type must be a media type such as application/pdf')
  return type
}

const shown = (d: StoredDocument): ShownDocument => ({
  id: d.id,
  tenant_id: d.tenant_id,
  metadata: d.metadata,
  content_type: d.content_type,
  created_by: d.created_by,
  created_at: d.created_at,
})

/** The bytes of `source`, as they come, in pieces of any size. */
async function* piecesOf(source: DocumentSource): AsyncGenerator<Uint8Array> {
  if (source instanceof Uint8Array) {
    yield source
    return
  }
  const stream = source instanceof Blob ? source.stream() : source
  for await (const piece of stream as AsyncIterable<unknown>) {
    if (!(piece instanceof Uint8Array)) throw invalid('document', 'must be bytes')
    yield piece
  }
}

/** The turn a long upload or download gives others between two chunks (I/O, timers, other requests). */
/** A too-large document's error: nothing is kept of it. */
const tooLarge = () => invalid('document', `must be at most ${MAX_DOCUMENT_BYTES} bytes`)

/**
 * Writes `source` as chunks of `head`'s document, each as soon as it is full (the one before the
 * last is written when more bytes come, so the last is known and sealed as last). Reads no byte
 * past the bound: a source longer than `MAX_DOCUMENT_BYTES` throws before its excess is read on.
 */
async function writeChunks(ctx: Ctx, head: StoredDocument, source: DocumentSource) {
  let size = 0
  let index = 0
  let pending: Buffer | undefined
  const buffer = Buffer.allocUnsafe(DOCUMENT_CHUNK_BYTES)
  let filled = 0
  const put = async (bytes: Buffer, last: boolean) => {
    const chunk: StoredDocumentChunk = {
      tenant_id: head.tenant_id,
      document_id: head.id,
      index,
      last,
      data: bytes.toString('base64'),
    }
    index++
    await ctx.store.write({ ops: [{ op: 'document_chunk.put', chunk }] })
    await nextTurn()
  }
  for await (const piece of piecesOf(source)) {
    size += piece.byteLength
    if (size > MAX_DOCUMENT_BYTES) throw tooLarge()
    for (let at = 0; at < piece.byteLength; ) {
      const n = Math.min(DOCUMENT_CHUNK_BYTES - filled, piece.byteLength - at)
      buffer.set(piece.subarray(at, at + n), filled)
      filled += n
      at += n
      if (filled === DOCUMENT_CHUNK_BYTES) {
        if (pending) await put(pending, false)
        pending = Buffer.from(buffer)
        filled = 0
      }
    }
  }
  if (filled > 0) {
    if (pending) await put(pending, false)
    pending = Buffer.from(buffer.subarray(0, filled))
  }
  if (!pending) throw invalid('document', 'must not be empty')
  await put(pending, true)
  return { size, chunks: index }
}

/** Reads chunk `index` of `doc`, checking it is where the head says (the last one sealed as last). */
async function readChunk(ctx: Ctx, doc: StoredDocument, index: number): Promise<Uint8Array> {
  const chunk = await ctx.store.getDocumentChunk(doc.tenant_id, doc.id, index)
  if (!chunk || chunk.last !== (index === doc.chunks - 1))
    throw new ServiceError(
      'unreadable',
      `the stored data of document ${doc.id} is incomplete and can't be read`,
    )
  return new Uint8Array(Buffer.from(chunk.data, 'base64'))
}

/**
 * The document's bytes as a web stream that reads (and opens) one chunk per pull: a download holds
 * one chunk at a time. The first chunk is read before the stream is handed out, so a document that
 * can't be read answers an error rather than a cut stream.
 */
async function bytesOf(ctx: Ctx, doc: StoredDocument): Promise<ReadableStream<Uint8Array>> {
  const first = await readChunk(ctx, doc, 0)
  let next = 1
  let sent = first.byteLength
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        controller.enqueue(first)
        if (doc.chunks === 1) controller.close()
      },
      async pull(controller) {
        await nextTurn()
        const bytes = await readChunk(ctx, doc, next++)
        sent += bytes.byteLength
        controller.enqueue(bytes)
        if (next < doc.chunks) return
        if (sent !== doc.size)
          throw new ServiceError(
            'unreadable',
            `the stored data of document ${doc.id} is incomplete and can't be read`,
          )
        controller.close()
      },
    },
    { highWaterMark: 0 },
  )
}

/** The document operations (`/documents`), under `documents:*` permissions. */
export function documentOperations(ctx: Ctx) {
  const tenant = ctx.principal.tenantId
  // A document still uploading, like one of another tenant, answers as unknown.
  const mustGet = async (id: string) => {
    const d = await ctx.store.getDocument(tenant, id)
    if (d?.state !== 'ready') throw notFound('document')
    return d
  }
  return {
    async upload(input: DocumentUpload): Promise<ShownDocument> {
      requirePermission(ctx.principal, 'documents:create')
      if (
        typeof input !== 'object' ||
        input === null ||
        input.document === undefined ||
        input.document === null
      )
        throw invalid('document', 'is required')
      const request = parse(documentRequestInput, input.request ?? null)
      const source = input.document
      const given = input.content_type ?? (source instanceof Blob && source.type ? source.type : undefined)
      const head: StoredDocument = {
        id: newId(),
        tenant_id: tenant,
        state: 'uploading',
        metadata: request?.metadata ?? {},
        content_type: documentContentType(given),
        size: 0,
        chunks: 0,
        created_by: ctx.principal.id,
        created_at: ctx.now(),
      }
      await ctx.store.write({ ops: [{ op: 'document.put', document: head }] })
      try {
        const { size, chunks } = await writeChunks(ctx, head, source)
        const ready: StoredDocument = { ...head, state: 'ready', size, chunks }
        await ctx.store.write({ ops: [{ op: 'document.put', document: ready }] })
        return shown(ready)
      } catch (error) {
        await ctx.store
          .write({ ops: [{ op: 'document.delete', tenant_id: tenant, id: head.id }] })
          .catch(() => {})
        throw error
      }
    },
    async get(id: string): Promise<ShownDocument> {
      requirePermission(ctx.principal, 'documents:read')
      return shown(await mustGet(id))
    },
    /** The document's bytes, streamed chunk by chunk, and the media type it was uploaded as. */
    async data(
      id: string,
    ): Promise<{ content_type: string; size: number; body: ReadableStream<Uint8Array> }> {
      requirePermission(ctx.principal, 'documents:reveal')
      const doc = await mustGet(id)
      return { content_type: doc.content_type, size: doc.size, body: await bytesOf(ctx, doc) }
    },
    async delete(id: string): Promise<void> {
      requirePermission(ctx.principal, 'documents:delete')
      await mustGet(id)
      await ctx.store.write({ ops: [{ op: 'document.delete', tenant_id: tenant, id }] })
    },
  }
}
