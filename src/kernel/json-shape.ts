/**
 * How many values a JSON body may hold in all (each array element and each object member counts,
 * at any depth), checked before it is parsed: a body of 80 000 members, within its bytes, held the
 * process 200–350 ms in parsing and the walks of its values (the API's bodies); a proxy body of
 * 520 000 elements, 600 ms a request.
 */
export const MAX_JSON_VALUES = 10_000

/**
 * What is wrong with the shape of JSON `text`, found by one pass over its characters without
 * recursion: arrays and objects nested deeper than `maxDepth` (a 100 000-deep array costs a scan,
 * not a stack), or more than `maxValues` elements and members in all. Strings are skipped by
 * searching for their closing quote (`indexOf`), so a body that is mostly one long string costs
 * about as little as copying it.
 */
export function jsonShape(text: string, maxDepth: number, maxValues: number): 'deep' | 'many' | null {
  let depth = 0
  let values = 0
  let opened = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue
    // A container's first member (one that is not closed at once); each comma, one more.
    if ((opened && c !== 0x5d && c !== 0x7d) || c === 0x2c) {
      if (++values > maxValues) return 'many'
    }
    opened = false
    if (c === 0x22) i = closingQuote(text, i + 1)
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > maxDepth) return 'deep'
      opened = true
    } else if (c === 0x5d || c === 0x7d) depth--
  }
  return null
}

/** The index of the quote that closes a JSON string whose text starts at `from`: the first not escaped. */
function closingQuote(text: string, from: number): number {
  for (let at = from; ; at++) {
    at = text.indexOf('"', at)
    if (at === -1) return text.length
    // Escaped when an odd number of backslashes precede it (each run is counted once).
    let slashes = 0
    while (text.charCodeAt(at - 1 - slashes) === 0x5c) slashes++
    if (slashes % 2 === 0) return at
  }
}
