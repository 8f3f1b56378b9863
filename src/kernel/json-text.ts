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
