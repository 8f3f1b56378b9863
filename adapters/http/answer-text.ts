import { nextTurn } from '../../src/kernel/index.js'
/**
 * The JSON text of an answer, built so that a large page does not hold the event loop in one
 * block: a list's `data` items are serialized one by one, letting other requests run (a
 * `setImmediate` turn) whenever `YIELD_BYTES` of text have added up since the last turn.
 */

/** Characters of answer text between two turns given to other requests. */
export const YIELD_BYTES = 64 * 1024

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

/**
 * `answerText`'s text and its length in UTF-8 bytes: a page's bytes are counted item by item in the
 * item's own step, and its items are joined in a turn of their own, so no step of a large page
 * scans or copies the whole answer but the join.
 */
export async function sizedAnswerText(result: unknown): Promise<{ text: string; bytes: number }> {
  if (!isPage(result)) {
    const text = JSON.stringify(result)
    // A large answer (a 400 KB token) is written in a turn after the one that serialized it.
    if (text !== undefined && text.length > YIELD_BYTES) await nextTurn()
    return { text, bytes: text === undefined ? 0 : Buffer.byteLength(text) }
  }
  const parts: string[] = []
  let bytes = 2
  for (const [key, value] of Object.entries(result)) {
    const text = key === 'data' ? await items(result.data) : { text: JSON.stringify(value), bytes: 0 }
    // As JSON.stringify does: a member whose value has no JSON text (undefined, a function) is left out.
    if (text.text === undefined) continue
    const member = key === 'data' ? `"data":[${text.text}]` : `${JSON.stringify(key)}:${text.text}`
    bytes += key === 'data' ? text.bytes + 9 : Buffer.byteLength(member)
    parts.push(member)
  }
  return { text: `{${parts.join(',')}}`, bytes: bytes + Math.max(0, parts.length - 1) }
}

/**
 * The items' JSON texts joined by commas (`null` for an item without one, as in an array), and
 * their UTF-8 bytes; a large page's texts are joined in a turn after the last one's.
 */
async function items(data: unknown[]): Promise<{ text: string; bytes: number }> {
  const texts: string[] = []
  let since = 0
  let chars = 0
  let bytes = Math.max(0, data.length - 1)
  for (const item of data) {
    if (since >= YIELD_BYTES) {
      since = 0
      await nextTurn()
    }
    const text = JSON.stringify(item) ?? 'null'
    since += text.length
    chars += text.length
    bytes += Buffer.byteLength(text)
    texts.push(text)
  }
  if (chars > YIELD_BYTES) await nextTurn()
  return { text: texts.join(','), bytes }
}
