import type { Ctx } from '../call/index.js'
import { renderTemplate } from '../expressions/index.js'
import type { Json, StoredToken } from '../kernel/index.js'
import { invalid, nextTurn, withTokenFields } from '../kernel/index.js'
import type { NewToken } from './dedup.js'

/**
 * Basis Theory's token types: what each validates its `data` against, and the containers, mask and
 * fingerprint expression a token of the type gets when the create body gives none. Every type
 * takes a given `containers`, `mask` and `fingerprint_expression` instead of its defaults. A type
 * not listed here is free-form: it validates nothing and takes the defaults of `token`.
 */
export interface TokenTypeRules {
  /** Containers when none are given. */
  containers: readonly string[]
  /** Mask expression when none is given (`undefined`: none, so a masked read shows no data). */
  mask: Json | undefined
  /** The expression fingerprinted when none is given. */
  fingerprint: string
  /** Throws `validation_failed` naming the field (`data`, `data.number`) when `data` is not valid. */
  validate(data: Json): void
}

const REVEAL_LAST_4 = '{{ data | reveal_last: 4 }}'

/** Whether `digits` passes the Luhn checksum. */
export function luhnValid(digits: string): boolean {
  let sum = 0
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48
    if (i % 2 === 1) {
      d *= 2
      if (d > 9) d -= 9
    }
    sum += d
  }
  return sum % 10 === 0
}

/** Whether a 9-digit routing number passes the ABA checksum: 3·(d1+d4+d7) + 7·(d2+d5+d8) + (d3+d6+d9) ≡ 0 (mod 10). */
export function abaValid(digits: string): boolean {
  if (!/^\d{9}$/.test(digits)) return false
  const d = [...digits].map(Number)
  const sum = 3 * (d[0]! + d[3]! + d[6]!) + 7 * (d[1]! + d[4]! + d[7]!) + (d[2]! + d[5]! + d[8]!)
  return sum % 10 === 0
}

function string(value: Json | undefined, field: string): string {
  if (typeof value !== 'string') throw invalid(field, 'must be a string')
  return value
}

function cardNumber(value: Json | undefined, field: string): void {
  const s = string(value, field)
  if (!/^\d{13,19}$/.test(s)) throw invalid(field, 'must be 13 to 19 digits, without separators')
  if (!luhnValid(s)) throw invalid(field, 'must be a valid card number (Luhn checksum)')
}

function routingNumber(value: Json | undefined, field: string): void {
  const s = string(value, field)
  if (!/^\d{9}$/.test(s)) throw invalid(field, 'must be 9 digits')
  if (!abaValid(s)) throw invalid(field, 'must be a valid ABA routing number (checksum)')
}

function accountNumber(value: Json | undefined, field: string): void {
  const s = string(value, field)
  if (!/^\d{3,17}$/.test(s)) throw invalid(field, 'must be 3 to 17 digits')
}

function object(data: Json, allowed: readonly string[]): { [key: string]: Json } {
  if (data === null || typeof data !== 'object' || Array.isArray(data))
    throw invalid('data', 'must be an object')
  for (const key of Object.keys(data)) {
    if (!allowed.includes(key))
      throw invalid(`data.${key}`, `is not a field of this type (${allowed.join(', ')})`)
  }
  return data
}

function integerIn(value: Json | undefined, field: string, min: number, max: number): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalid(field, `must be an integer from ${min} to ${max}`)
  }
}

function validateCard(data: Json): void {
  const card = object(data, ['number', 'expiration_month', 'expiration_year', 'cvc'])
  if (card.number === undefined) throw invalid('data.number', 'is required')
  cardNumber(card.number, 'data.number')
  const month = card.expiration_month
  const year = card.expiration_year
  if ((month === undefined) !== (year === undefined)) {
    const missing = month === undefined ? 'data.expiration_month' : 'data.expiration_year'
    throw invalid(missing, 'is required with the other expiration field')
  }
  if (month !== undefined) integerIn(month, 'data.expiration_month', 1, 12)
  if (year !== undefined) integerIn(year, 'data.expiration_year', 1000, 9999)
  if (card.cvc !== undefined && !/^\d{3,4}$/.test(string(card.cvc, 'data.cvc'))) {
    throw invalid('data.cvc', 'must be 3 or 4 digits')
  }
}

function validateBank(data: Json): void {
  const bank = object(data, ['routing_number', 'account_number'])
  if (bank.routing_number === undefined) throw invalid('data.routing_number', 'is required')
  routingNumber(bank.routing_number, 'data.routing_number')
  if (bank.account_number === undefined) throw invalid('data.account_number', 'is required')
  accountNumber(bank.account_number, 'data.account_number')
}

/** SSN: `###-##-####` or 9 digits; area 000, 666 and 900–999, group 00 and serial 0000 are never issued. */
function validateSsn(data: Json): void {
  const s = string(data, 'data')
  const m = /^(\d{3})-?(\d{2})-?(\d{4})$/.exec(s)
  if (!m || (s.includes('-') && s.length !== 11)) throw invalid('data', 'must be ###-##-#### or 9 digits')
  const [, area, group, serial] = m
  if (area === '000' || area === '666' || area![0] === '9')
    throw invalid('data', 'has an area number never issued')
  if (group === '00') throw invalid('data', 'has a group number never issued (00)')
  if (serial === '0000') throw invalid('data', 'has a serial number never issued (0000)')
}

function validateEin(data: Json): void {
  const s = string(data, 'data')
  if (!/^\d{2}-\d{7}$|^\d{9}$/.test(s)) throw invalid('data', 'must be ##-####### or 9 digits')
}

const NONE = () => {}

/** The rules of each documented token type, by name. */
export const TOKEN_TYPES: Readonly<Record<string, TokenTypeRules>> = Object.freeze({
  token: {
    containers: ['/general/high/'],
    mask: undefined,
    fingerprint: '{{ data | stringify }}',
    validate: NONE,
  },
  card: {
    containers: ['/pci/high/'],
    mask: {
      number: REVEAL_LAST_4.replace('data', 'data.number'),
      expiration_month: '{{ data.expiration_month }}',
      expiration_year: '{{ data.expiration_year }}',
    },
    fingerprint: '{{ data.number }}',
    validate: validateCard,
  },
  bank: {
    containers: ['/bank/high/'],
    mask: {
      routing_number: '{{ data.routing_number }}',
      account_number: '{{ data.account_number | reveal_last: 4 }}',
    },
    fingerprint: '{{ data.account_number }}|{{ data.routing_number }}',
    validate: validateBank,
  },
  card_number: {
    containers: ['/pci/high/'],
    mask: REVEAL_LAST_4,
    fingerprint: '{{ data }}',
    validate: (data) => cardNumber(data, 'data'),
  },
  us_bank_account_number: {
    containers: ['/bank/high/'],
    mask: REVEAL_LAST_4,
    fingerprint: '{{ data }}',
    validate: (data) => accountNumber(data, 'data'),
  },
  us_bank_routing_number: {
    containers: ['/bank/low/'],
    mask: REVEAL_LAST_4,
    fingerprint: '{{ data }}',
    validate: (data) => routingNumber(data, 'data'),
  },
  social_security_number: {
    containers: ['/pii/high/'],
    mask: REVEAL_LAST_4,
    fingerprint: "{{ data | remove: '-' }}",
    validate: validateSsn,
  },
  employer_id_number: {
    containers: ['/pii/high/'],
    mask: REVEAL_LAST_4,
    fingerprint: "{{ data | remove: '-' }}",
    validate: validateEin,
  },
} satisfies Record<string, TokenTypeRules>)

/** The rules of `type`: its own, or `token`'s for a free-form type. */
export function typeRules(type: string): TokenTypeRules {
  return Object.hasOwn(TOKEN_TYPES, type) ? TOKEN_TYPES[type]! : TOKEN_TYPES.token!
}

/** The purpose of fingerprint keyed hashes (see `Ctx.hmac`). */
export const FINGERPRINT_PURPOSE = 'fingerprint'

/**
 * What a token's fingerprint hashes: its type, U+0000, and what its `fingerprint_expression` (or
 * the type's default) renders with `data` and `metadata` bound, as those parts (hashed as their
 * concatenation, never made into one string: a 400 KB value would be copied); `undefined` when
 * that renders nothing. A bad given expression answers 400 naming `fingerprint_expression`.
 */
export function fingerprintSource(token: StoredToken): readonly string[] | undefined {
  const given = token.fingerprint_expression
  const vars = { data: token.data, metadata: token.metadata }
  let text: string | null
  if (given !== undefined)
    text = renderTemplate(given, vars, 'fingerprint_expression', undefined, token.tenant_id)
  else {
    // A type's default fails only on data too large to render (`stringify` of a huge `token`):
    // such a token gets no fingerprint rather than a refusal.
    try {
      text = renderTemplate(
        typeRules(token.type).fingerprint,
        vars,
        'fingerprint_expression',
        undefined,
        token.tenant_id,
      )
    } catch {
      text = null
    }
  }
  return text === null ? undefined : [token.type, '\u0000', text]
}

/**
 * The token's fingerprint: the keyed hash (under the tenant's key) of `fingerprintSource`, so
 * equal contents of one type give equal fingerprints within a tenant and differ across tenants
 * and types. `undefined` when the expression renders nothing.
 */
export async function fingerprintOf(ctx: Ctx, token: StoredToken): Promise<string | undefined> {
  const source = fingerprintSource(token)
  if (source === undefined) return undefined
  const chars = source.reduce((n, part) => n + part.length, 0)
  if (chars <= LARGE_SOURCE_CHARS) return ctx.hmac(FINGERPRINT_PURPOSE, source)
  // A large source is hashed in a turn of its own (about half a millisecond at 400 KB), and what
  // follows (the token's sealing) waits for the next: others' requests run between.
  await nextTurn()
  const fingerprint = await ctx.hmac(FINGERPRINT_PURPOSE, source)
  await nextTurn()
  return fingerprint
}

/** Fingerprint sources of more characters than this are hashed in a turn of their own. */
const LARGE_SOURCE_CHARS = 64 * 1024

/**
 * `token` with its fingerprint made again with `hmac` (a tenant key other than the one it was made
 * under: a restored snapshot's tenants get new keys); without one when its expression renders
 * nothing or fails on data from before token types.
 */
export async function refingerprinted(
  token: StoredToken,
  hmac: (purpose: string, value: readonly string[]) => Promise<string>,
): Promise<StoredToken> {
  const { fingerprint: _old, ...rest } = token
  let source: readonly string[] | undefined
  try {
    source = fingerprintSource(token)
  } catch {
    source = undefined
  }
  return source === undefined ? rest : { ...rest, fingerprint: await hmac(FINGERPRINT_PURPOSE, source) }
}

/** `token` with its `fingerprint` (re)computed (see `fingerprintOf`). */
export async function fingerprinted(ctx: Ctx, token: StoredToken): Promise<StoredToken> {
  return withTokenFields(token, { fingerprint: await fingerprintOf(ctx, token) })
}

/** A new token with its fingerprint made (see `fingerprinted`); what was asked with it carries over. */
export async function fingerprintedNew(ctx: Ctx, created: NewToken): Promise<NewToken> {
  return { ...created, token: await fingerprinted(ctx, created.token) }
}
