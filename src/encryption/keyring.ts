import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  createSecretKey,
  hash,
  hkdfSync,
  type KeyObject,
  randomBytes,
  randomFillSync,
} from 'node:crypto'

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

/**
 * Random IVs drawn from a pool refilled in one call (`randomFillSync`), 12 bytes at a time. Each
 * 12 bytes of the pool go out once and the pool is refilled from the CSPRNG when spent, so IVs are
 * as random as `randomBytes(12)` at a 256th of the calls into it (IVs are not secret: each is
 * stored beside its ciphertext). It carries no intent, only randomness drawn ahead: one pool serves
 * every key of the process.
 */
class IvPool {
  private readonly pool = Buffer.allocUnsafeSlow(IV_BYTES * 256)
  private at = this.pool.byteLength

  /** Writes a fresh random IV at `out[0..12)`. */
  writeTo(out: Buffer): void {
    if (this.at === this.pool.byteLength) {
      randomFillSync(this.pool)
      this.at = 0
    }
    this.pool.copy(out, 0, this.at, this.at + IV_BYTES)
    this.at += IV_BYTES
  }
}

const ivs = new IvPool()

/**
 * AES-256-GCM of `plaintext` under `key` with `aad`: IV ‖ ciphertext ‖ tag in one buffer, written
 * in place (no intermediate buffers to concatenate). `key` is a `KeyObject`, made once per key.
 */
export function sealBytes(key: KeyObject, plaintext: Uint8Array, aad: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(IV_BYTES + plaintext.byteLength + TAG_BYTES)
  ivs.writeTo(out)
  const cipher = createCipheriv('aes-256-gcm', key, out.subarray(0, IV_BYTES))
  cipher.setAAD(aad)
  let at = IV_BYTES + cipher.update(plaintext).copy(out, IV_BYTES)
  at += cipher.final().copy(out, at)
  cipher.getAuthTag().copy(out, at)
  return out
}

/** Opens what `sealBytes` made; throws when the key, the AAD or the bytes don't match. */
export function openBytes(key: KeyObject, sealed: Uint8Array, aad: Uint8Array): Buffer {
  const bytes = Buffer.isBuffer(sealed)
    ? sealed
    : Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength)
  if (bytes.length < IV_BYTES + TAG_BYTES) throw new Error('sealed value too short')
  const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES))
  decipher.setAAD(aad)
  decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES))
  const body = decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES))
  const rest = decipher.final()
  return rest.length === 0 ? body : Buffer.concat([body, rest])
}

/**
 * A master key held in memory: 32 bytes of key material. Wrapping is AES-256-GCM with the context
 * as additional authenticated data. Its `keyId` is a hash of the key (safe to store).
 */
export function localMasterKey(material: Uint8Array): KeyProvider {
  if (material.byteLength !== 32) throw new TypeError('masterKey: a master key is exactly 32 bytes')
  const raw = Buffer.from(material)
  const keyId = `local:${hash('sha256', Buffer.concat([Buffer.from('tokenvault key id\u0000'), raw]), 'hex').slice(0, 16)}`
  const key = createSecretKey(raw)
  raw.fill(0)
  const aad = (context: string) => Buffer.from(`tokenvault:data-key:${context}`, 'utf8')
  return {
    keyId,
    wrap: (dataKey, context) => sealBytes(key, dataKey, aad(context)),
    unwrap: (wrapped, context) => openBytes(key, wrapped, aad(context)),
  }
}

/** `MasterKey` as a provider. */
export function toProvider(key: MasterKey): KeyProvider {
  return key instanceof Uint8Array ? localMasterKey(key) : key
}

/** A tenant's unwrapped data key, with the subkeys made from it. */
export interface TenantKey {
  /** Encrypts token fields (AES-256-GCM); made once, reused by every seal and open. */
  readonly encryption: KeyObject
  /** Keys for keyed hashes (fingerprints, search indexes), one per purpose, each made once. */
  hmacKey(purpose: string): KeyObject
}

/** The subkeys of a tenant's data key (HKDF-SHA-256), as `KeyObject`s derived once and kept. */
export function tenantKey(dataKey: Uint8Array): TenantKey {
  const derive = (info: string) =>
    createSecretKey(Buffer.from(hkdfSync('sha256', dataKey, Buffer.alloc(0), info, 32)))
  const encryption = derive('tokenvault:token-fields')
  const hmacKeys = new Map<string, KeyObject>()
  return {
    encryption,
    hmacKey(purpose) {
      let key = hmacKeys.get(purpose)
      if (!key) {
        key = derive(`tokenvault:hmac:${purpose}`)
        hmacKeys.set(purpose, key)
      }
      return key
    },
  }
}

/** Encrypts one JSON value of a token field; `aad` binds tenant, token and field. */
export function sealValue(key: TenantKey, value: unknown, aad: string): string {
  return sealBytes(
    key.encryption,
    Buffer.from(JSON.stringify(value), 'utf8'),
    Buffer.from(aad, 'utf8'),
  ).toString('base64')
}

/**
 * Decrypts what `sealValue` made (its base64, or the bytes it names); throws when the key, the AAD
 * or the bytes don't match.
 */
export function openValue(key: TenantKey, sealed: string | Uint8Array, aad: string): unknown {
  const bytes = typeof sealed === 'string' ? Buffer.from(sealed, 'base64') : sealed
  return JSON.parse(openBytes(key.encryption, bytes, Buffer.from(aad, 'utf8')).toString('utf8'))
}

/** HMAC-SHA-256 of `value` under the tenant's key for `purpose`, as base64url. */
export function keyedHash(key: TenantKey, purpose: string, value: string): string {
  return createHmac('sha256', key.hmacKey(purpose)).update(value, 'utf8').digest('base64url')
}

/** A new random data key (32 bytes). */
export function newDataKey(): Buffer {
  return randomBytes(32)
}
