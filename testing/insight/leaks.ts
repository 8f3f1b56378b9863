import { randomInt } from 'node:crypto'
import { format } from 'node:util'
import type { Json, Token } from '../../src/kernel/index.js'
import { MIN_PLAINTEXT_LENGTH } from './encodings.js'
import {
  findLeaks,
  isMessage,
  LeakError,
  type LeakFinding,
  messageValue,
  type Searchable,
} from './leak-check.js'

/** A token made to be planted: its data is unique, so finding it anywhere is a leak. */
export interface Canary {
  /** The token, as its create answered (masked). */
  token: Token
  id: string
  type: string
  /** The token's data as created. */
  data: Json
  /** The string to plant in fixtures, logs, request bodies: the card number, the account number, the value. */
  value: string
}

/** A capture of `process.stdout`, `process.stderr` and `console` started by `leaks.watch()`. */
export interface LeakWatch {
  /** What was written so far, chunk by chunk. */
  output(): string[]
  /** The findings in what was written so far. */
  findings(): LeakFinding[]
  /** Stops capturing (puts the streams and `console` back), then fails with a `LeakError` if a plaintext was written. */
  stop(): void
}

/** Options of `leaks.watch()`. */
export interface WatchOptions {
  /** Whether what is written still reaches the real streams. @default true */
  passThrough?: boolean
}

/** `vault.leaks`: whether any plaintext the vault holds appears in what a test captured. */
export interface Leaks {
  /**
   * Fails with a `LeakError` (token ids, paths, offsets and encodings, never a plaintext) when a
   * plaintext the vault holds (each string and number in a token's data, 6 characters or more)
   * appears in `value`: as is, JSON-escaped (once or twice), URL- or form-encoded, hex, base64 or
   * base64url (at any alignment), as a number grouped by spaces or dashes, in any letter case
   * (base64 as written). `value` may be a string, bytes, an object, an array (of log lines, rows),
   * a `Map`, `Set`, `Headers`, an `Error`; a `Response` or `Request` is read (then it answers a promise).
   */
  check(value: Response | Request): Promise<void>
  check(value: unknown): void
  /** The findings in `value` (empty when none), without failing. */
  find(value: unknown): LeakFinding[]
  /** A token of `type` (default `token`) whose data is a unique canary value, made with the private key. */
  canary(type?: string): Promise<Canary>
  /** Captures `process.stdout`, `process.stderr` and `console` until `stop()`, which then checks what they got. */
  watch(options?: WatchOptions): LeakWatch
  /** The shortest plaintext searched for, in characters (6): shorter values are not searched. */
  readonly minLength: number
}

/** What `createLeaks` needs from the test vault. */
export interface LeakSource {
  /** The index, up to date with the vault's state. */
  index(): Searchable
  /** Creates a token with the test vault's private key (outside the test's accounting). */
  create(type: string, data: Json): Promise<Token>
  /** Marks a token as a canary in later findings. */
  markCanary(id: string): void
}

const digits = (n: number) => Array.from({ length: n }, () => String(randomInt(10))).join('')

/** `prefix` followed by random digits and one Luhn check digit: `length` digits in all. */
function luhnNumber(prefix: string, length: number): string {
  const body = prefix + digits(length - prefix.length - 1)
  let sum = 0
  for (let i = 0; i < body.length; i++) {
    let d = Number(body[body.length - 1 - i])
    if (i % 2 === 0) d = d * 2 > 9 ? d * 2 - 9 : d * 2
    sum += d
  }
  return body + String((10 - (sum % 10)) % 10)
}

/** A routing number with a valid ABA checksum. */
function routingNumber(): string {
  const d = [...digits(8)].map(Number)
  const partial = 3 * (d[0]! + d[3]! + d[6]!) + 7 * (d[1]! + d[4]!) + d[2]! + d[5]!
  // 7·d8 + d9 completes the sum to a multiple of 10: pick d9 for d8 as drawn.
  const d9 = (10 - ((partial + 7 * d[7]!) % 10)) % 10
  return d.join('') + String(d9)
}

/** Data of `type` that is unique, valid for the type, and the string to plant from it. */
function canaryData(type: string): { data: Json; value: string } {
  switch (type) {
    case 'card': {
      const number = luhnNumber('4000', 16)
      return { data: { number, expiration_month: 12, expiration_year: 2099 }, value: number }
    }
    case 'card_number': {
      const number = luhnNumber('4000', 16)
      return { data: number, value: number }
    }
    case 'bank': {
      const account = digits(12)
      return { data: { routing_number: routingNumber(), account_number: account }, value: account }
    }
    case 'us_bank_account_number':
    case 'employer_id_number': {
      const value = type === 'employer_id_number' ? `${digits(2)}-${digits(7)}` : digits(12)
      return { data: value, value }
    }
    case 'us_bank_routing_number': {
      const value = routingNumber()
      return { data: value, value }
    }
    case 'social_security_number': {
      const value = `${100 + randomInt(500)}-${10 + randomInt(89)}-${1000 + randomInt(8999)}`
      return { data: value, value }
    }
    default: {
      const value = `tvcanary_${digits(16)}`
      return { data: value, value }
    }
  }
}

/** Output captured from the streams and `console` while a watch runs. */
function capture(options: WatchOptions, check: (chunks: string[]) => LeakFinding[]): LeakWatch {
  const pass = options.passThrough ?? true
  const chunks: string[] = []
  let inConsole = 0
  const undo: (() => void)[] = []
  for (const stream of [process.stdout, process.stderr]) {
    const original = stream.write
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      if (inConsole === 0)
        chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString())
      if (pass) return (original as (...a: unknown[]) => boolean).call(stream, chunk, ...rest)
      const done = rest.find((r) => typeof r === 'function') as (() => void) | undefined
      if (done) queueMicrotask(done)
      return true
    }) as typeof stream.write
    undo.push(() => {
      stream.write = original
    })
  }
  for (const method of ['log', 'info', 'warn', 'error', 'debug', 'trace'] as const) {
    const original = console[method]
    console[method] = (...args: unknown[]) => {
      chunks.push(`${format(...args)}\n`)
      if (!pass) return
      // What console writes to the streams is this same text: not captured twice.
      inConsole++
      try {
        original.apply(console, args)
      } finally {
        inConsole--
      }
    }
    undo.push(() => {
      console[method] = original
    })
  }
  let stopped = false
  return {
    output: () => [...chunks],
    findings: () => check(chunks),
    stop: () => {
      if (!stopped) for (const u of undo.reverse()) u()
      stopped = true
      const found = check(chunks)
      if (found.length) throw new LeakError(found)
    },
  }
}

/** The `leaks` of a test vault over its plaintext index. */
export function createLeaks(source: LeakSource): Leaks {
  const find = (value: unknown) => findLeaks(source.index(), value)
  const fail = (value: unknown) => {
    const found = find(value)
    if (found.length) throw new LeakError(found)
  }
  function check(value: Response | Request): Promise<void>
  function check(value: unknown): void
  function check(value: unknown): void | Promise<void> {
    if (isMessage(value)) return messageValue(value).then(fail)
    fail(value)
  }
  return {
    check,
    find,
    minLength: MIN_PLAINTEXT_LENGTH,
    canary: async (type = 'token') => {
      const { data, value } = canaryData(type)
      const token = await source.create(type, data)
      source.markCanary(token.id)
      return { token, id: token.id, type, data, value }
    },
    watch: (options = {}) => capture(options, find),
  }
}
