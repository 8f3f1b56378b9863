/**
 * The JSON text of an answer, built so that a large page does not hold the event loop in one
 * block: a list's `data` items are serialized one by one, letting other requests run (a
 * `setImmediate` turn) whenever `YIELD_BYTES` of text have added up since the last turn.
 */

/** Characters of answer text between two turns given to other requests. */
export const YIELD_BYTES = 64 * 1024

const turn = () => new Promise<void>((resolve) => setImmediate(resolve))

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
  if (!isPage(result)) {
    const text = JSON.stringify(result)
    // A large answer (a 400 KB token) is written in a turn after the one that serialized it.
    if (text !== undefined && text.length > YIELD_BYTES) await turn()
    return text
  }
  const parts: string[] = []
  for (const [key, value] of Object.entries(result)) {
    if (key !== 'data') {
      const text = JSON.stringify(value)
      // As JSON.stringify does: a member whose value has no JSON text (undefined, a function) is left out.
      if (text !== undefined) parts.push(`${JSON.stringify(key)}:${text}`)
      continue
    }
    parts.push(`"data":[${await items(result.data)}]`)
  }
  return `{${parts.join(',')}}`
}

/** The items' JSON texts joined by commas (`null` for an item without one, as in an array). */
async function items(data: unknown[]): Promise<string> {
  const texts: string[] = []
  let since = 0
  for (const item of data) {
    if (since >= YIELD_BYTES) {
      since = 0
      await turn()
    }
    const text = JSON.stringify(item) ?? 'null'
    since += text.length
    texts.push(text)
  }
  return texts.join(',')
}
