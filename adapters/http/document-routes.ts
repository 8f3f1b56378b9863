import busboy from 'busboy'
import { MAX_DOCUMENT_BYTES } from '../../src/documents/index.js'
import { nextTurn } from '../../src/kernel/index.js'
import { type Incoming, type Outgoing, TOO_LARGE, UNREADABLE } from './exchange.js'
import { HttpProblem } from './problem.js'
import type { JsonSchema } from './response-schemas.js'
import type { Route, RouteDoc } from './route-types.js'

/** A form part's name as a refusal shows it: quoted, at most 40 characters; a part may have none. */
const partName = (name: string | undefined) =>
  typeof name === 'string' ? `"${name.slice(0, 40)}"` : 'with no name'

/**
 * The most bytes a `POST /documents` body may take: the largest document and 64 KiB for the
 * multipart envelope (boundaries, part headers, the `request` field). Past it: 413, nothing read on.
 */
export const MAX_UPLOAD_BODY_BYTES = MAX_DOCUMENT_BYTES + 64 * 1024

/** The pieces a body is fed to the parser in, a turn of the event loop between two. */
const PIECE_BYTES = 64 * 1024

/** What the multipart body of `POST /documents` holds, as `documents.upload` takes it. */
export interface ParsedUpload {
  document?: AsyncIterable<Uint8Array>
  content_type?: string
  request?: unknown
}

const bad = (message: string, field = 'body') => new HttpProblem(400, message, {}, { [field]: [message] })

/** The `request` form field: JSON text of `{ metadata }`. */
function requestField(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    throw bad('must be a JSON object such as {"metadata":{"name":"value"}}', 'request')
  }
}

/**
 * Parses a `multipart/form-data` body as the reference's upload form: one file part `document`
 * (its bytes, and its `Content-Type`), at most one field `request` (JSON). Any other part is a
 * 400. The body is fed to busboy in 64 KiB pieces, a turn between two, so a 10 MiB upload never
 * holds the event loop; the document's bytes are the parser's pieces (no copy of the whole).
 */
export async function parseUpload(body: Uint8Array, contentType: string): Promise<ParsedUpload> {
  let parser: busboy.Busboy
  try {
    parser = busboy({
      headers: { 'content-type': contentType },
      limits: { files: 2, fields: 2, parts: 3, fieldSize: 64 * 1024, fileSize: MAX_DOCUMENT_BYTES + 1 },
    })
  } catch {
    throw new HttpProblem(
      415,
      'The request body must be declared as Content-Type multipart/form-data with a boundary.',
    )
  }
  const out: ParsedUpload = {}
  const pieces: Uint8Array[] = []
  let problem: HttpProblem | undefined
  const refuse = (p: HttpProblem) => {
    problem ??= p
  }
  parser.on('file', (name, stream, info) => {
    if (name !== 'document' || out.document !== undefined) {
      stream.resume()
      return refuse(bad(`the form holds a file part ${partName(name)}; only one "document" is read`))
    }
    out.content_type = info.mimeType
    out.document = (async function* () {
      yield* pieces
    })()
    stream.on('data', (piece: Buffer) => pieces.push(piece))
  })
  parser.on('field', (name, value) => {
    if (name !== 'request' || out.request !== undefined)
      return refuse(bad(`the form holds a field ${partName(name)}; only one "request" is read`))
    out.request = requestField(value)
  })
  for (const limit of ['partsLimit', 'filesLimit', 'fieldsLimit'] as const)
    parser.on(limit, () => refuse(bad('the form holds one "document" file and at most one "request" field')))
  const done = new Promise<void>((resolve, reject) => {
    parser.on('close', resolve)
    parser.on('error', (error: unknown) =>
      reject(
        bad(`the multipart body can't be read: ${String((error as Error)?.message ?? error).slice(0, 100)}`),
      ),
    )
  })
  done.catch(() => {})
  for (let at = 0; at < body.byteLength; at += PIECE_BYTES) {
    parser.write(body.subarray(at, at + PIECE_BYTES))
    await nextTurn()
  }
  parser.end()
  await done
  if (problem) throw problem
  return out
}

/**
 * Reads the bounded body of an upload and parses it (see `parseUpload`). A body past the bound is
 * a 413 at once, as any route's; a form that is not the reference's is answered only after the
 * key and its permission are checked (a key without `documents:create` is told 403 whatever it
 * sent): its problem is handed on as a document whose bytes can't be read, so the core refuses it
 * and keeps nothing.
 */
export async function readUpload(incoming: Incoming): Promise<ParsedUpload> {
  const type = incoming.header('content-type') ?? ''
  const bytes = await incoming.readBody(MAX_UPLOAD_BODY_BYTES)
  if (bytes === TOO_LARGE)
    throw new HttpProblem(413, `The request body is larger than ${MAX_UPLOAD_BODY_BYTES} bytes.`, {
      connection: 'close',
    })
  try {
    if (!/^multipart\/form-data\s*;/i.test(type))
      throw new HttpProblem(415, 'The request body must be declared as Content-Type multipart/form-data.')
    if (bytes === UNREADABLE) throw new HttpProblem(400, 'The request body could not be read.')
    if (bytes === null) return {}
    return await parseUpload(bytes, type)
  } catch (error) {
    if (!(error instanceof HttpProblem)) throw error
    return { document: refused(error) }
  }
}

/** A document source that fails with `problem` when read. */
async function* refused(problem: HttpProblem): AsyncGenerator<Uint8Array> {
  yield* []
  throw problem
}

type Run = Route['run']

/** The documents routes (`/documents`): a multipart upload, JSON reads, a binary download. */
export const DOCUMENT_ROUTES: ReadonlyArray<readonly [string, string, Route]> = [
  [
    'POST',
    '/documents',
    { status: 201, query: false, upload: true, run: ((c, _p, _q, b) => c.documents.upload(b)) as Run },
  ],
  ['GET', '/documents/:id', { status: 200, query: false, run: (c, [id]) => c.documents.get(id!) }],
  ['DELETE', '/documents/:id', { status: 204, query: false, run: (c, [id]) => c.documents.delete(id!) }],
  [
    'GET',
    '/documents/:id/data',
    { status: 200, query: false, binary: true, run: (c, [id]) => c.documents.data(id!) },
  ],
]

/** What a binary route's `run` gives: the media type, the length, the bytes as a stream. */
export interface BinaryResult {
  content_type: string
  size: number
  body: ReadableStream<Uint8Array>
}

/**
 * The answer of a binary route: the bytes as a stream the host writes as it reads it (the core
 * opens one chunk per pull, a turn apart), with their media type and length; `nosniff` and
 * `attachment` so that a browser never renders a document as a page of this origin.
 */
export function binaryAnswer(result: BinaryResult): Outgoing {
  return {
    status: 200,
    headers: {
      'content-type': result.content_type,
      'content-length': String(result.size),
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      'content-disposition': 'attachment',
    },
    body: result.body,
  }
}

/** The bytes an upload reserves in admission: its `Content-Length`, or the bound; past the bound, 413. */
export function declaredUploadBytes(incoming: Incoming): number {
  const declared = incoming.header('content-length')
  const length = declared === null ? Number.NaN : Number(declared)
  if (length > MAX_UPLOAD_BODY_BYTES)
    throw new HttpProblem(413, `The request body is larger than ${MAX_UPLOAD_BODY_BYTES} bytes.`, {
      connection: 'close',
    })
  return Number.isSafeInteger(length) && length >= 0 ? length : MAX_UPLOAD_BODY_BYTES
}

const documentSchema: JsonSchema = {
  type: 'object',
  properties: {
    id: { type: 'string', format: 'uuid' },
    tenant_id: { type: 'string', format: 'uuid' },
    metadata: { type: 'object', additionalProperties: { type: 'string' } },
    content_type: { type: 'string' },
    created_by: { type: 'string' },
    created_at: { type: 'string', format: 'date-time' },
  },
  required: ['id', 'tenant_id', 'metadata', 'content_type', 'created_by', 'created_at'],
}

/** The OpenAPI entries of `DOCUMENT_ROUTES` (spread into `ROUTE_DOCS`). */
export const DOCUMENT_ROUTE_DOCS: Record<string, RouteDoc> = {
  'POST /documents': {
    operationId: 'uploadDocument',
    tag: 'Documents',
    summary: `Upload a document (\`documents:create\`): a multipart form of one file \`document\` (at most ${MAX_DOCUMENT_BYTES} bytes; its Content-Type is kept) and an optional field \`request\`, the JSON of \`{ metadata }\``,
    form: {
      type: 'object',
      properties: {
        document: { type: 'string', format: 'binary' },
        request: { type: 'string', description: 'JSON: {"metadata": {"name": "value"}}' },
      },
      required: ['document'],
    },
    response: documentSchema,
  },
  'GET /documents/:id': {
    tag: 'Documents',
    summary: "Get a document's metadata (`documents:read`)",
    response: documentSchema,
  },
  'DELETE /documents/:id': {
    tag: 'Documents',
    summary: 'Delete a document and its bytes (`documents:delete`)',
  },
  'GET /documents/:id/data': {
    operationId: 'getDocumentData',
    tag: 'Documents',
    summary: "A document's bytes as uploaded, with its Content-Type (`documents:reveal`)",
    responseMediaType: 'application/octet-stream',
  },
}
