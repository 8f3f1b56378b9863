import { mayEscapeInJson, nextTurn } from '../../src/kernel/index.js'
/**
 * The JSON text of an answer, built so that a large page does not hold the event loop in one
 * block: a list's `data` items are serialized one by one, letting other requests run (a
 * `setImmediate` turn) whenever `YIELD_BYTES` of text have added up since the last turn.
 */

/** Characters of answer text between two turns given to other requests. */
export const YIELD_BYTES = 64 * 1024

/**
 * An answer's JSON text as parts that, joined, are `JSON.stringify`'s text (no part for a value
 * without one), with its length in characters and in UTF-8 bytes.
 */
export interface AnswerParts {
  parts: string[]
  chars: number
  bytes: number
}

/** Whether `value` is a plain object whose `data` is an array of more than one item (a page). */
function isPage(value: unknown): value is Record<string, unknown> & { data: unknown[] } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const proto = Object.getPrototypeOf(value)
  if (proto !== Object.prototype && proto !== null) return false
  const data = (value as { data?: unknown }).data
  return Array.isArray(data) && data.length > 1
}

/**
 * `JSON.stringify(result)`, the same text, character for character. A page's items are serialized
 * apart, with a turn for other requests between two of them once `YIELD_BYTES` have added up.
 */
export async function answerText(result: unknown): Promise<string> {
  return (await sizedAnswerText(result)).text
}

/** `answerText`'s text and its length in UTF-8 bytes; a large page's parts are joined in a turn of their own. */
export async function sizedAnswerText(result: unknown): Promise<{ text: string; bytes: number }> {
  const { parts, chars, bytes } = await answerParts(result)
  if (parts.length === 0) return { text: JSON.stringify(result), bytes: 0 }
  if (parts.length > 1 && chars > YIELD_BYTES) await nextTurn()
  return { text: parts.length === 1 ? parts[0]! : parts.join(''), bytes }
}

/**
 * The answer's text as parts (`AnswerParts`): a page's members and items each a part of its own, so
 * no step of a large page scans or copies the whole answer, and the parts can be written as they
 * are, never joined into one string (`pacedText`). Anything else is one part, serialized whole.
 */
export async function answerParts(result: unknown): Promise<AnswerParts> {
  if (!isPage(result)) {
    const text = JSON.stringify(result) as string | undefined
    if (text === undefined) return { parts: [], chars: 0, bytes: 0 }
    // A large answer (a 400 KB token) is written in a turn after the one that serialized it.
    if (text.length > YIELD_BYTES) await nextTurn()
    return { parts: [text], chars: text.length, bytes: Buffer.byteLength(text) }
  }
  const parts = ['{']
  let bytes = 2
  let members = 0
  for (const [key, value] of Object.entries(result)) {
    // As JSON.stringify does: a member whose value has no JSON text (undefined, a function) is left out.
    const text = key === 'data' ? undefined : (JSON.stringify(value) as string | undefined)
    if (key !== 'data' && text === undefined) continue
    if (members++ > 0) parts.push(',')
    if (key === 'data') {
      parts.push('"data":[')
      bytes += 9 + (await items(result.data, parts))
      parts.push(']')
    } else {
      const member = `${JSON.stringify(key)}:${text}`
      bytes += Buffer.byteLength(member)
      parts.push(member)
    }
  }
  parts.push('}')
  let chars = 0
  for (const part of parts) chars += part.length
  return { parts, chars, bytes: bytes + Math.max(0, members - 1) }
}

/**
 * The items' JSON texts pushed onto `parts`, a comma between two (`null` for an item without one,
 * as in an array): their UTF-8 bytes, commas included.
 */
async function items(data: unknown[], parts: string[]): Promise<number> {
  let since = 0
  let bytes = Math.max(0, data.length - 1)
  let first = true
  for (const item of data) {
    if (since >= YIELD_BYTES) {
      since = 0
      await nextTurn()
    }
    if (!first) parts.push(',')
    first = false
    const large = largeData(item)
    if (large) {
      // Its data's steps each took their turn: the next item starts afresh.
      bytes += await largeItem(large, parts)
      since = 0
      continue
    }
    const text = JSON.stringify(item) ?? 'null'
    since += text.length
    bytes += Buffer.byteLength(text)
    parts.push(text)
  }
  return bytes
}

/**
 * Characters of a string serialized in one step: more than `YIELD_BYTES`, so that each step's text
 * is one large object to the garbage collector (never copied by a scavenge), yet a fraction of a
 * millisecond of work.
 */
export const STRING_STEP_CHARS = 4 * YIELD_BYTES

/** An item that is a plain object whose `data` is a string of more than `STRING_STEP_CHARS` characters. */
function largeData(item: unknown): (Record<string, unknown> & { data: string }) | undefined {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return undefined
  const proto = Object.getPrototypeOf(item)
  if ((proto !== Object.prototype && proto !== null) || 'toJSON' in item) return undefined
  const data = (item as { data?: unknown }).data
  return typeof data === 'string' && data.length > STRING_STEP_CHARS
    ? (item as Record<string, unknown> & { data: string })
    : undefined
}

/**
 * `JSON.stringify(item)` pushed onto `parts` as its members and its `data` in pieces of
 * `STRING_STEP_CHARS` characters, each serialized in a turn of its own (a 900 KB string took one
 * step of 1-3 ms), a piece with nothing to escape pushed as the slice it is: its UTF-8 bytes. A
 * piece never ends between the halves of a surrogate pair, so the pieces' texts, joined, are the
 * whole string's.
 */
async function largeItem(item: Record<string, unknown> & { data: string }, parts: string[]): Promise<number> {
  let bytes = 2
  let members = 0
  parts.push('{')
  for (const [key, value] of Object.entries(item)) {
    const text = key === 'data' ? undefined : (JSON.stringify(value) as string | undefined)
    if (key !== 'data' && text === undefined) continue
    const head = `${members++ > 0 ? ',' : ''}${JSON.stringify(key)}:`
    if (key !== 'data') {
      parts.push(head + text)
      bytes += Buffer.byteLength(head + text)
      continue
    }
    parts.push(`${head}"`)
    bytes += Buffer.byteLength(head) + 2
    const data = item.data
    for (let at = 0; at < data.length; ) {
      let to = Math.min(data.length, at + STRING_STEP_CHARS)
      if (to < data.length && isHighSurrogate(data.charCodeAt(to - 1))) to--
      await nextTurn()
      const piece = jsonStringBody(data.slice(at, to))
      bytes += Buffer.byteLength(piece)
      parts.push(piece)
      at = to
    }
    parts.push('"')
  }
  parts.push('}')
  return bytes
}

/**
 * `JSON.stringify(piece)` without its quotes: `piece` itself when it has nothing to escape (a
 * slice of the value, not a copy: a 900 KB string of plain text is never copied to be answered).
 */
const jsonStringBody = (piece: string) =>
  mayEscapeInJson(piece) ? JSON.stringify(piece).slice(1, -1) : piece

/** Whether `code` is the first half of a surrogate pair. */
const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff
