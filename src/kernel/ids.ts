import { hash, randomUUID } from 'node:crypto'
import { nanoid } from 'nanoid'

/** SHA-256 of `value` as lowercase hex: how keys and nonces are stored and looked up. */
export function sha256(value: string): string {
  return hash('sha256', value, 'hex')
}

/** A new API key: `key_` followed by a 32-character nanoid (URL-safe alphabet, 192 bits). */
export function newApiKey(): string {
  return `key_${nanoid(32)}`
}

/** A new single-use nonce: a 32-character nanoid (192 bits). */
export function newNonce(): string {
  return nanoid(32)
}

/** A new random UUID (v4): the shape the reference gives every record id. */
export function newId(): string {
  return randomUUID()
}

/** The latest instant a UUID v7's 48-bit timestamp holds. */
const MAX_V7_MS = 0xffff_ffff_ffff
/** The counter's last value: past it, the next id takes the next millisecond. */
const MAX_COUNTER = 0xfff
/** A clock set back by more than this (ms) starts the ids again from its instant. */
const SET_BACK_MS = 1000
let parsedAt = ''
let parsedMs = 0
/** The millisecond, counter and text before the counter of the last id made. */
let lastMs = -1
let counter = 0
let head = ''

/**
 * A new time-ordered UUID (version 7, RFC 9562) for the instant `at` (an ISO date-time from the
 * injected clock): 48 bits of milliseconds since the epoch, a 12-bit counter, and 62 random bits
 * (as `randomUUID` draws them).
 *
 * Ids come out in increasing order within the process (RFC 9562's monotonic method 1): the first id
 * of a millisecond starts the counter at a random value below 2048, each further id of that
 * millisecond takes the next value, and past 4095 the ids go on in the next millisecond. An id of
 * an instant up to a second earlier than the last id's (a clock stepped back a little) goes on from
 * the last id too; a clock set back further starts again from its instant. So an id's time is its
 * instant's, or a little later when more than about 2048 ids were made in one millisecond or the
 * clock stepped back.
 *
 * Token ids are made so. Ids made close in time sort next to each other, so a store's ordered
 * indexes (LMDB's B-trees, PostgreSQL's primary key and term indexes, the memory store's sorted
 * sets) take a burst of creates into the few pages at their end, instead of one page each all
 * over the tree. An id shows when its token was created, as `created_at` does to whoever reads the
 * token; its 62 random bits keep it unguessable.
 */
export function newOrderedId(at: string): string {
  if (at !== parsedAt) {
    // A clock set before 1970 (or past the year 10889) gives the nearest instant a v7 id holds.
    parsedMs = Math.min(Math.max(Date.parse(at) || 0, 0), MAX_V7_MS)
    parsedAt = at
  }
  const random = randomUUID()
  if (parsedMs > lastMs || lastMs - parsedMs > SET_BACK_MS) start(parsedMs, random)
  else if (++counter > MAX_COUNTER) start(Math.min(lastMs + 1, MAX_V7_MS), random)
  // A v4 UUID from its variant group on: 62 random bits.
  return head + counter.toString(16).padStart(3, '0') + random.slice(18)
}

/** Begins the millisecond `ms`, its counter at a random value below 2048 (11 of `random`'s bits). */
function start(ms: number, random: string) {
  const hex = ms.toString(16).padStart(12, '0')
  head = `${hex.slice(0, 8)}-${hex.slice(8)}-7`
  lastMs = ms
  counter = Number.parseInt(random.slice(15, 18), 16) & 0x7ff
}
