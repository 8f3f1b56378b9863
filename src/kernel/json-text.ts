/**
 * A character `JSON.stringify` writes escaped: `"`, `\`, a control character, a surrogate (paired
 * ones too, to be safe: `JSON.stringify` escapes only lone ones).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what JSON escapes
const ESCAPED = /["\\\u0000-\u001f\ud800-\udfff]/

/** The bytes whose characters `JSON.stringify` escapes in a well-formed string: controls, `"`, `\`. */
const ESCAPED_BYTES = [...Array.from({ length: 0x20 }, (_, b) => b), 0x22, 0x5c]

/** The same characters, as strings. */
const ESCAPED_CHARS = ESCAPED_BYTES.map((b) => String.fromCharCode(b))

/**
 * Strings of at least this many characters are searched character by character (`indexOf`, a fast
 * scan each) rather than with `ESCAPED`: 34 scans of 256 Ki characters took about a quarter of a
 * millisecond where the expression took about one.
 */
const SCANNED_CHARS = 4096

/**
 * Whether `JSON.stringify(text)` may be other than `text` between quotes. When it is not, a large
 * string's JSON can be written as the string itself (its bytes, or slices of it) with no copy made.
 */
export function mayEscapeInJson(text: string): boolean {
  if (text.length < SCANNED_CHARS) return ESCAPED.test(text)
  return !text.isWellFormed() || ESCAPED_CHARS.some((c) => text.indexOf(c) !== -1)
}

/**
 * Whether the UTF-8 bytes of a well-formed string (`isWellFormed`: no lone surrogate) hold a
 * character `JSON.stringify` escapes. A byte under 0x80 is never part of a longer character, so a
 * search for each such byte (`indexOf`, a fast scan) decides it: about a quarter of a millisecond
 * at 400 KB, where a regular expression over the string took about one.
 */
export function utf8NeedsJsonEscape(utf8: Uint8Array): boolean {
  const bytes = Buffer.from(utf8.buffer, utf8.byteOffset, utf8.byteLength)
  return ESCAPED_BYTES.some((b) => bytes.indexOf(b) !== -1)
}

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
