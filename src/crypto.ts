import { hash, randomBytes, randomUUID } from 'node:crypto'

/** SHA-256 of `value` as lowercase hex: how keys and nonces are stored and looked up. */
export function sha256(value: string): string {
  return hash('sha256', value, 'hex')
}

/** A new API key: `key_` followed by 32 URL-safe random characters (192 bits). */
export function newApiKey(): string {
  return `key_${randomBytes(24).toString('base64url')}`
}

/** A new single-use nonce (192 bits). */
export function newNonce(): string {
  return randomBytes(24).toString('base64url')
}

/** A new random UUID (v4). */
export function newId(): string {
  return randomUUID()
}
