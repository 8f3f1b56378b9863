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
/** Tenants whose last id is kept; past it, every tenant's is let go (their next ids start afresh). */
const TENANTS_KEPT = 4096

/**
 * The last id a tenant was given: its millisecond, its counter, and the text before the counter;
 * and the last instant asked of it with its milliseconds (`at`, `atMs`), so a burst of a tenant's
 * ids at one instant parses it once.
 */
interface Last {
  ms: number
  counter: number
  head: string
  at: string
  atMs: number
}
const lasts = new Map<string, Last>()

/**
 * A new time-ordered UUID (version 7, RFC 9562) for the instant `at` (an ISO date-time from the
 * injected clock): 48 bits of milliseconds since the epoch, a 12-bit counter, and 62 random bits
 * (as `randomUUID` draws them).
 *
 * A tenant's ids come out in increasing order within the process (RFC 9562's monotonic method 1):
 * its first id of a millisecond starts the counter at a random value below 2048, each further id of
 * that millisecond takes the next value, and past 4095 the ids go on in the next millisecond. Each
 * tenant counts on its own, so the gap between two of its ids tells nothing of another tenant's
 * creates. (The last ids of at most 4096 tenants are kept: past that all are let go, and the next
 * id of each starts its millisecond afresh.) An id of an instant up to a second earlier than the
 * tenant's last id's (a clock stepped back a little) goes on from that id too; a clock set back
 * further starts again from its instant. So an id's time is its instant's, or a little later when
 * a tenant made more than about 2048 ids in one millisecond or the clock stepped back.
 *
 * Token ids are made so. Ids made close in time sort next to each other, so a store's ordered
 * indexes (LMDB's B-trees, PostgreSQL's primary key and term indexes, the memory store's sorted
 * sets) take a burst of creates into the few pages at their end, instead of one page each all
 * over the tree. An id shows when its token was created, as `created_at` does to whoever reads the
 * token; its 62 random bits keep it unguessable.
 */
export function newOrderedId(at: string, tenantId: string): string {
  const random = randomUUID()
  let last = lasts.get(tenantId)
  if (last === undefined) {
    if (lasts.size >= TENANTS_KEPT) lasts.clear()
    last = { ms: -1, counter: 0, head: '', at: '', atMs: 0 }
    lasts.set(tenantId, last)
  }
  if (at !== last.at) {
    // A clock set before 1970 (or past the year 10889) gives the nearest instant a v7 id holds.
    last.atMs = Math.min(Math.max(Date.parse(at) || 0, 0), MAX_V7_MS)
    last.at = at
  }
  const parsedMs = last.atMs
  if (parsedMs > last.ms || last.ms - parsedMs > SET_BACK_MS) start(last, parsedMs, random)
  else if (++last.counter > MAX_COUNTER) start(last, Math.min(last.ms + 1, MAX_V7_MS), random)
  // A v4 UUID from its variant group on: 62 random bits.
  return last.head + last.counter.toString(16).padStart(3, '0') + random.slice(18)
}

/** Begins the millisecond `ms`, its counter at a random value below 2048 (11 of `random`'s bits). */
function start(last: Last, ms: number, random: string) {
  const hex = ms.toString(16).padStart(12, '0')
  last.head = `${hex.slice(0, 8)}-${hex.slice(8)}-7`
  last.ms = ms
  last.counter = Number.parseInt(random.slice(15, 18), 16) & 0x7ff
}
