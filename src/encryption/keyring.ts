import { createCipheriv, createDecipheriv, createHmac, hash, hkdfSync, randomBytes } from 'node:crypto'

/**
 * Wraps and unwraps data keys with a master key the host holds (a KMS, an HSM, or key material in
 * memory). `wrap` and `unwrap` bind `context` (the tenant id) into the result: a wrapped key moved
 * to another tenant does not unwrap.
 */
export interface KeyProvider {
  /** Names this master key in stored records (never the key itself), so the right one unwraps. */
  readonly keyId: string
  wrap(dataKey: Uint8Array, context: string): Promise<Uint8Array> | Uint8Array
  unwrap(wrapped: Uint8Array, context: string): Promise<Uint8Array> | Uint8Array
}

/** A master key: 32 bytes of key material, or a provider. */
export type MasterKey = Uint8Array | KeyProvider

/** A tenant's data key as stored beside the tenant: wrapped by the master key named `key_id`. */
export interface WrappedDataKey {
  key_id: string
  /** base64 of the wrapped key. */
  wrapped: string
}

const IV_BYTES = 12
const TAG_BYTES = 16

function seal(key: Uint8Array, plaintext: Uint8Array, aad: string): Buffer {
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  cipher.setAAD(Buffer.from(aad, 'utf8'))
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()])
  return Buffer.concat([iv, body, cipher.getAuthTag()])
}

function open(key: Uint8Array, sealed: Uint8Array, aad: string): Buffer {
  const bytes = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength)
  if (bytes.length < IV_BYTES + TAG_BYTES) throw new Error('sealed value too short')
  const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES))
  decipher.setAAD(Buffer.from(aad, 'utf8'))
  decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES))
  return Buffer.concat([
    decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)),
    decipher.final(),
  ])
}

/**
 * A master key held in memory: 32 bytes of key material. Wrapping is AES-256-GCM with the context
 * as additional authenticated data. Its `keyId` is a hash of the key (safe to store).
 */
export function localMasterKey(material: Uint8Array): KeyProvider {
  if (material.byteLength !== 32) throw new TypeError('masterKey: a master key is exactly 32 bytes')
  const key = Buffer.from(material)
  const keyId = `local:${hash('sha256', Buffer.concat([Buffer.from('tokenvault key id\u0000'), key]), 'hex').slice(0, 16)}`
  return {
    keyId,
    wrap: (dataKey, context) => seal(key, dataKey, `tokenvault:data-key:${context}`),
    unwrap: (wrapped, context) => open(key, wrapped, `tokenvault:data-key:${context}`),
  }
}

/** `MasterKey` as a provider. */
export function toProvider(key: MasterKey): KeyProvider {
  return key instanceof Uint8Array ? localMasterKey(key) : key
}

/** A tenant's unwrapped data key, with the subkeys made from it. */
export interface TenantKey {
  /** Encrypts token fields (AES-256-GCM). */
  readonly encryption: Buffer
  /** Keys for keyed hashes (fingerprints, search indexes), one per purpose. */
  hmacKey(purpose: string): Buffer
}

export function tenantKey(dataKey: Uint8Array): TenantKey {
  const encryption = Buffer.from(hkdfSync('sha256', dataKey, Buffer.alloc(0), 'tokenvault:token-fields', 32))
  const hmacKeys = new Map<string, Buffer>()
  return {
    encryption,
    hmacKey(purpose) {
      let key = hmacKeys.get(purpose)
      if (!key) {
        key = Buffer.from(hkdfSync('sha256', dataKey, Buffer.alloc(0), `tokenvault:hmac:${purpose}`, 32))
        hmacKeys.set(purpose, key)
      }
      return key
    },
  }
}

/** Encrypts one JSON value of a token field; `aad` binds tenant, token and field. */
export function sealValue(key: TenantKey, value: unknown, aad: string): string {
  return seal(key.encryption, Buffer.from(JSON.stringify(value), 'utf8'), aad).toString('base64')
}

/** Decrypts what `sealValue` made; throws when the key, the AAD or the bytes don't match. */
export function openValue(key: TenantKey, sealed: string, aad: string): unknown {
  return JSON.parse(open(key.encryption, Buffer.from(sealed, 'base64'), aad).toString('utf8'))
}

/** HMAC-SHA-256 of `value` under the tenant's key for `purpose`, as base64url. */
export function keyedHash(key: TenantKey, purpose: string, value: string): string {
  return createHmac('sha256', key.hmacKey(purpose)).update(value, 'utf8').digest('base64url')
}

/** A new random data key (32 bytes). */
export function newDataKey(): Buffer {
  return randomBytes(32)
}
