import { jsonShape, MAX_JSON_VALUES, nextTurn } from '../../src/kernel/index.js'
import { type Incoming, TOO_LARGE, UNREADABLE } from './exchange.js'
import { HttpProblem } from './problem.js'

/** The media type of a `Content-Type`, lower-cased, without parameters. */
function mediaTypeOf(contentType: string): string {
  const semi = contentType.indexOf(';')
  return (semi === -1 ? contentType : contentType.slice(0, semi)).trim().toLowerCase()
}

/** Whether a `Content-Type` names JSON: `application/json` or any `application/*+json`, parameters ignored. */
export function isJsonMediaType(contentType: string | null): boolean {
  if (contentType === null) return false
  const type = mediaTypeOf(contentType)
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'))
}

/**
 * Throws 415 unless the request declares `required` as its `Content-Type` (parameters ignored):
 * the reference answers PATCH /tokens/{id} without `application/merge-patch+json` so.
 */
export function requireMediaType(contentType: string | null, required: string): void {
  if (contentType !== null && mediaTypeOf(contentType) === required) return
  throw new HttpProblem(415, `The request body must be declared as Content-Type ${required}.`)
}

const decoder = new TextDecoder('utf-8', { fatal: true })

/**
 * Bodies of more bytes than this decode and parse each in a turn of their own (`setImmediate`):
 * about a millisecond each at 400 KB, which other tenants' requests then need not wait behind in
 * one block (`npm run bench:attacks`, attack (a)).
 */
const LARGE_BODY_BYTES = 64 * 1024

/** How deep a JSON request body may nest (arrays and objects): deeper is a 400 before anything walks it. */
export const MAX_BODY_DEPTH = 128

/**
 * How many values a JSON request body may hold in all (each array element and each object member
 * counts, at any depth): past it a 400 before it is parsed (`MAX_JSON_VALUES`, which the proxy's
 * JSON bodies keep too).
 */
export const MAX_BODY_VALUES = MAX_JSON_VALUES

function tooLarge(maxBytes: number): HttpProblem {
  return new HttpProblem(413, `The request body is larger than ${maxBytes} bytes.`, { connection: 'close' })
}

/**
 * 415 for a body declared encoded (`Content-Encoding` other than `identity`): it was parsed as
 * plain text. Decoding it is left out: a small gzip body inflates past every bound on its bytes.
 */
function refuseEncoded(incoming: Incoming): void {
  const encoding = incoming.header('content-encoding')?.trim().toLowerCase()
  if (encoding && encoding !== 'identity')
    throw new HttpProblem(415, 'The request body must not be encoded (Content-Encoding): send it as it is.')
}

function notJson(): HttpProblem {
  return new HttpProblem(
    415,
    'The request body must be JSON: Content-Type application/json or application/*+json.',
  )
}

/**
 * The body bytes a request is admitted with, from its headers alone: its `Content-Length`, or
 * `maxBytes` when it has none (a chunked body may grow to it). Throws what `readJsonBody` would
 * throw from the headers, before anything is read: 413 past `maxBytes`, 415 for a body not declared JSON.
 */
export function declaredBodyBytes(incoming: Incoming, maxBytes: number): number {
  if (incoming.hasBody?.() === false) return 0
  const declared = incoming.header('content-length')
  const length = declared === null ? Number.NaN : Number(declared)
  if (length > maxBytes) throw tooLarge(maxBytes)
  if (length > 0 && !isJsonMediaType(incoming.header('content-type'))) throw notJson()
  refuseEncoded(incoming)
  return Number.isSafeInteger(length) && length >= 0 ? length : maxBytes
}

/**
 * Reads and parses a JSON request body of at most `maxBytes` bytes. An absent or empty body is
 * `undefined`, whatever the content type. Throws `HttpProblem`: 413 when the body is too large
 * (decided from `Content-Length` before reading, or while reading, which then stops), 415 when a
 * body is not declared as JSON, 400 when it is not valid UTF-8 JSON, nests deeper than
 * `MAX_BODY_DEPTH` levels or holds more than `MAX_BODY_VALUES` values.
 */
export async function readJsonBody(incoming: Incoming, maxBytes: number): Promise<unknown> {
  const declared = incoming.header('content-length')
  const length = declared === null ? Number.NaN : Number(declared)
  if (length > maxBytes) throw tooLarge(maxBytes)
  const json = isJsonMediaType(incoming.header('content-type'))
  if (length > 0 && !json) throw notJson()
  refuseEncoded(incoming)
  const bytes = await incoming.readBody(maxBytes)
  if (bytes === TOO_LARGE) throw tooLarge(maxBytes)
  if (bytes === UNREADABLE) throw new HttpProblem(400, 'The request body could not be read.')
  if (bytes === null || bytes.byteLength === 0) return undefined
  if (!json) throw notJson()
  const large = bytes.byteLength > LARGE_BODY_BYTES
  if (large) await nextTurn()
  let text: string
  try {
    text = decoder.decode(bytes)
  } catch {
    throw new HttpProblem(400, 'The request body is not valid UTF-8.', {}, { body: ['is not valid UTF-8'] })
  }
  // Its shape first: V8 parsed a 512 000-deep array for 360 ms before it was refused.
  const shape = jsonShape(text, MAX_BODY_DEPTH, MAX_BODY_VALUES)
  if (shape !== null) {
    const message =
      shape === 'deep'
        ? `is nested deeper than ${MAX_BODY_DEPTH} levels`
        : `holds more than ${MAX_BODY_VALUES} values (array elements and object members)`
    throw new HttpProblem(400, `The request body ${message}.`, {}, { body: [message] })
  }
  if (large) await nextTurn()
  try {
    return JSON.parse(text)
  } catch {
    throw new HttpProblem(400, 'The request body is not valid JSON.', {}, { body: ['is not valid JSON'] })
  }
}
