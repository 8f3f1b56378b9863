/**
 * The shortest plaintext a leak check searches for, in characters: shorter values ("12", a cvc,
 * an expiration month) would match ordinary text and raise false alarms.
 */
export const MIN_PLAINTEXT_LENGTH = 6

/** The shortest base64 fragment searched: a shorter one matches random base64 too often. */
const MIN_BASE64_LENGTH = 8

/** How a plaintext was written where it was found. */
export type LeakEncoding =
  | 'plain'
  | 'json'
  | 'json-twice'
  | 'url'
  | 'form'
  | 'hex'
  | 'base64'
  | 'base64url'
  | 'digits'

/** One form of one plaintext to search for. */
export interface Needle {
  /** The text to find, ASCII-lower-cased unless `exactCase`. */
  text: string
  encoding: LeakEncoding
  /** Base64 forms differ by case: they match only as written. */
  exactCase: boolean
  /** Searched in the digit view of the text (spaces and dashes between digits skipped). */
  digits: boolean
}

/** ASCII upper case to lower case; every other code unit as it is (so lengths never change). */
export const fold = (c: number) => (c >= 65 && c <= 90 ? c + 32 : c)

/** The ASCII-lower-cased text (code unit by code unit, length kept). */
export function foldText(s: string): string {
  // Only A–Z change: `toLowerCase` would also change other letters (and some lengths).
  return s.replace(/[A-Z]+/g, (run) => run.toLowerCase())
}

/**
 * The base64 characters of `bytes` that do not depend on what surrounds them when they sit at
 * byte offset `shift` (0, 1 or 2) of a longer encoded value: a leak inside a base64 blob (a JSON
 * body, a header) is found whatever its alignment.
 */
function base64Core(bytes: Buffer, shift: number, url: boolean): string {
  const padded = Buffer.concat([Buffer.alloc(shift), bytes])
  const whole = Math.floor(padded.length / 3) * 3
  const encoded = padded.subarray(0, whole).toString(url ? 'base64url' : 'base64')
  return encoded.slice(shift === 0 ? 0 : shift + 1)
}

/** Every form of `plaintext` a leak check looks for (none when it is shorter than the minimum). */
export function needlesOf(plaintext: string): Needle[] {
  if (plaintext.length < MIN_PLAINTEXT_LENGTH) return []
  const out: Needle[] = []
  const seen = new Set<string>()
  const add = (text: string, encoding: LeakEncoding, exactCase = false, digits = false) => {
    const key = `${exactCase ? 'E' : 'F'}${digits ? 'D' : 'T'}${exactCase ? text : foldText(text)}`
    if (text.length < MIN_PLAINTEXT_LENGTH || seen.has(key)) return
    seen.add(key)
    out.push({ text: exactCase ? text : foldText(text), encoding, exactCase, digits })
  }
  const bare = plaintext.replace(/[ -]/g, '')
  // A number is found however its digits are grouped (card numbers with spaces or dashes).
  if (/^\d+$/.test(bare) && bare.length >= MIN_PLAINTEXT_LENGTH) add(bare, 'digits', false, true)
  else add(plaintext, 'plain')
  // An encoding that leaves the text as it is adds nothing to search for.
  const changed = (text: string, encoding: LeakEncoding) => {
    if (text !== plaintext) add(text, encoding)
  }
  const json = JSON.stringify(plaintext).slice(1, -1)
  changed(json, 'json')
  changed(JSON.stringify(json).slice(1, -1), 'json-twice')
  const url = encodeURIComponent(plaintext)
  changed(url, 'url')
  changed(url.replace(/%20/g, '+'), 'form')
  const bytes = Buffer.from(plaintext, 'utf8')
  add(bytes.toString('hex'), 'hex')
  for (const shift of [0, 1, 2]) {
    for (const url64 of [false, true]) {
      const core = base64Core(bytes, shift, url64)
      if (core.length >= MIN_BASE64_LENGTH) add(core, url64 ? 'base64url' : 'base64', true)
    }
  }
  return out
}

/** The strings and numbers (as text) inside a token's data: each is a plaintext the vault holds. */
export function plaintextsOf(data: unknown, out: string[] = [], depth = 0): string[] {
  if (typeof data === 'string') out.push(data)
  else if (typeof data === 'number' || typeof data === 'bigint') out.push(String(data))
  else if (data !== null && typeof data === 'object' && depth < 64) {
    for (const value of Array.isArray(data) ? data : Object.values(data)) plaintextsOf(value, out, depth + 1)
  }
  return out
}
