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
