import { createHmac, randomInt } from 'node:crypto'
import { CHAR_COST, type Work } from './cost.js'
import { fail } from './failure.js'
import {
  bool,
  char,
  type Filter,
  int,
  isBytes,
  isObject,
  lengthArg,
  nullOr,
  toText,
  type Value,
} from './values.js'

/**
 * Basis Theory's filters for sensitive values: masking (`last4`, `reveal`, `reveal_last`,
 * `card_mask`), card parts (`card_bin`, `card_exp`), aliases of the same shape (`alias_*`) and
 * digests (`hmac`, written out by `to_base64` or `to_base16`).
 */

const DIGIT = /\d/
/** What `reveal_last` keeps unmasked. */
const DASH: ReadonlySet<string> = new Set('-')

const ALPHA = 'abcdefghijklmnopqrstuvwxyz'
const ALNUM = `${ALPHA}0123456789`

/**
 * The characters of `s` as a set, for filters that ask of each character of their input whether it
 * is one of them (`preserve`, a separator): each of its characters is charged as a character
 * handled in script, so a long list costs what it is, not once per character of the input.
 */
function charSet(s: string, work: Work): Set<string> {
  work.charge(CHAR_COST * s.length)
  return new Set(s)
}

/** The characters of argument `v` as a set (empty when nil), charged as `charSet`. */
const charSetArg = (v: Value, work: Work) =>
  charSet(v === undefined || v === null ? '' : toText(v, work), work)

/** Masks every character of `chars` for which `masked(i)` holds, but those in `preserve`. */
function maskChars(
  chars: string[],
  masked: (i: number) => boolean,
  maskChar: string,
  preserve: ReadonlySet<string>,
) {
  return chars.map((c, i) => (masked(i) && !preserve.has(c) ? maskChar : c)).join('')
}

/** The 6- or 8-digit BIN length of a card number with `digits` digits. */
const binLength = (digits: number) => (digits < 16 ? 6 : 8)

/** A random character of the same kind: a digit for a digit, a letter (same case) for a letter. */
function sameKind(c: string): string {
  if (/\d/.test(c)) return String(randomInt(10))
  if (/[a-z]/.test(c)) return ALPHA[randomInt(26)]!
  if (/[A-Z]/.test(c)) return ALPHA[randomInt(26)]!.toUpperCase()
  return c
}

function revealBounds(args: Value[], len: number): [number, number] {
  const first = args[0] === undefined || args[0] === null ? 0 : lengthArg(args[0], 'reveal_first_length')
  const last = args[1] === undefined || args[1] === null ? 0 : lengthArg(args[1], 'reveal_last_length')
  if (first + last > len) fail('reveals more characters than the value has')
  return [first, last]
}

function aliasCard(input: Value, args: Value[], work: Work): Value {
  const chars = [...toText(input, work)]
  const digits = chars.filter((c) => DIGIT.test(c)).length
  const bin = bool(args[0], false, work) ? binLength(digits) : 0
  const last = bool(args[1], false, work) ? 4 : 0
  if (bin + last > digits) fail('reveals more digits than the card number has')
  let seen = 0
  return chars
    .map((c) => {
      if (!DIGIT.test(c)) return c
      const i = seen++
      return i < bin || i >= digits - last ? c : String(randomInt(10))
    })
    .join('')
}

function cardMask(input: Value, args: Value[], work: Work): Value {
  const chars = [...toText(input, work)]
  const preserve = charSetArg(args[3], work)
  const maskChar = char(args[2], 'X', 'mask_char', work)
  const counted = chars.filter((c) => !preserve.has(c)).length
  const bin = bool(args[0], false, work) ? binLength(counted) : 0
  const last = bool(args[1], false, work) ? 4 : 0
  let seen = 0
  const out = chars
    .map((c) => {
      if (preserve.has(c)) return c
      const i = seen++
      return i < bin || i >= counted - last ? c : maskChar
    })
    .join('')
  return out === chars.join('') ? maskChars(chars, () => true, maskChar, preserve) : out
}

function cardExp(input: Value, args: Value[], work: Work): Value {
  if (!isObject(input)) return fail('card_exp needs a card object with expiration_month and expiration_year')
  const month = int(input.expiration_month ?? undefined, 'expiration_month')
  const year = int(input.expiration_year ?? undefined, 'expiration_year')
  if (args[0] === undefined || args[0] === null) fail('card_exp needs a date format such as MM/YY')
  const mm = String(month).padStart(2, '0')
  const yyyy = String(year).padStart(4, '0')
  const parts: Record<string, string> = { YYYY: yyyy, YY: yyyy.slice(-2), MM: mm }
  const format = toText(args[0], work)
  // Each part of the format is replaced in script, and each may grow by 2 characters.
  work.charge(CHAR_COST * format.length)
  work.willMake(2 * format.length)
  return format.replace(/YYYY|YY|MM/g, (m) => parts[m]!)
}

function reveal(v: Value, a: Value[], work: Work): Value {
  const chars = [...toText(v, work)]
  const first = a[0] === undefined ? 0 : lengthArg(a[0], 'reveal_first')
  const last = a[1] === undefined ? 0 : lengthArg(a[1], 'reveal_last')
  const maskChar = char(a[2], 'X', 'mask_char', work)
  const preserve = charSetArg(a[3], work)
  const all = () => maskChars(chars, () => true, maskChar, preserve)
  if (chars.length <= first + last) return all()
  const out = maskChars(chars, (i) => i >= first && i < chars.length - last, maskChar, preserve)
  return out === chars.join('') ? all() : out
}

function hmac(v: Value, a: Value[], work: Work): Value {
  if (v === undefined || v === null) fail('hmac needs a value')
  const alg = a[0] === undefined || a[0] === null ? 'sha-256' : toText(a[0], work).toLowerCase()
  const algorithm = { 'sha-1': 'sha1', 'sha-256': 'sha256', 'sha-512': 'sha512' }[alg]
  if (!algorithm) fail('hmac takes the algorithm sha-1, sha-256 or sha-512')
  if (a[1] === undefined || a[1] === null || toText(a[1], work) === '') fail('hmac needs a key')
  return new Uint8Array(createHmac(algorithm!, toText(a[1], work)).update(toText(v, work), 'utf8').digest())
}

/** The card, alias and digest filters, by name. */
export const CARD_FILTERS: Record<string, Filter> = {
  last4: nullOr((v, _, w) => toText(v, w).slice(-4)),
  reveal_last: nullOr((v, a, w) => {
    if (a[0] === undefined) fail('reveal_last needs the number of characters to reveal')
    const n = lengthArg(a[0], 'length')
    const chars = [...toText(v, w)]
    if (chars.length <= n) return chars.join('')
    return maskChars(chars, (i) => i < chars.length - n, char(a[1], 'X', 'mask_char', w), DASH)
  }),
  reveal: nullOr(reveal),
  card_bin: nullOr((v, a, w) => {
    const sep = charSetArg(a[0], w)
    const plain = [...toText(v, w)].filter((c) => !sep.has(c)).join('')
    return plain.slice(0, binLength(plain.length))
  }),
  card_exp: cardExp,
  card_mask: nullOr(cardMask),
  alias_card: nullOr(aliasCard),
  alias_preserve_format: nullOr((v, a, w) => {
    const chars = [...toText(v, w)]
    const [first, last] = revealBounds(a, chars.length)
    return chars.map((c, i) => (i < first || i >= chars.length - last ? c : sameKind(c))).join('')
  }),
  alias_preserve_length: nullOr((v, a, w) => {
    const chars = [...toText(v, w)]
    const [first, last] = revealBounds(a, chars.length)
    return chars.map((c, i) => (i < first || i >= chars.length - last ? c : ALNUM[randomInt(36)]!)).join('')
  }),
  hmac,
  to_base64: (v) => {
    if (!isBytes(v)) fail('to_base64 needs bytes (the output of hmac)')
    return Buffer.from(v as Uint8Array).toString('base64')
  },
  to_base16: (v) => {
    if (!isBytes(v)) fail('to_base16 needs bytes (the output of hmac)')
    return Buffer.from(v as Uint8Array)
      .toString('hex')
      .toUpperCase()
  },
}
