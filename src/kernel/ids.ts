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
let orderedAt = ''
let orderedHead = ''

/**
 * A new time-ordered UUID (version 7, RFC 9562) for the instant `at` (an ISO date-time from the
 * injected clock): its first 48 bits are `at` in milliseconds since the epoch, the other 74 bits
 * (beside version and variant) random, as `randomUUID` draws them.
 *
 * Token ids are made so. Ids made close in time sort next to each other, so a store's ordered
 * indexes (LMDB's B-trees, PostgreSQL's primary key and term indexes, the memory store's sorted
 * sets) take a burst of creates into the few pages at their end, instead of one page each all
 * over the tree. An id shows the millisecond its token was created at, as `created_at` does to
 * whoever reads the token; 74 random bits keep it unguessable.
 */
export function newOrderedId(at: string): string {
  if (at !== orderedAt) {
    // A clock set before 1970 (or past the year 10889) gives the nearest instant a v7 id holds.
    const ms = Math.min(Math.max(Date.parse(at) || 0, 0), MAX_V7_MS)
    const hex = ms.toString(16).padStart(12, '0')
    orderedHead = `${hex.slice(0, 8)}-${hex.slice(8)}-7`
    orderedAt = at
  }
  // A v4 UUID's characters after its version digit: 3 random hex digits, then the variant group.
  return orderedHead + randomUUID().slice(15)
}
