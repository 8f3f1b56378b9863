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
import { nextTurn } from '../kernel/index.js'

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
 * in place (no intermediate buffers to concatenate), after `room` bytes left for a header the
 * caller writes. `key` is a `KeyObject`, made once per key.
 */
export function sealBytes(key: KeyObject, plaintext: Uint8Array, aad: Uint8Array, room = 0): Buffer {
  const whole = Buffer.allocUnsafe(room + IV_BYTES + plaintext.byteLength + TAG_BYTES)
  const out = room === 0 ? whole : whole.subarray(room)
  ivs.writeTo(out)
  const cipher = createCipheriv('aes-256-gcm', key, out.subarray(0, IV_BYTES))
  cipher.setAAD(aad)
  let at = IV_BYTES + cipher.update(plaintext).copy(out, IV_BYTES)
  at += cipher.final().copy(out, at)
  cipher.getAuthTag().copy(out, at)
  return whole
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

/**
 * A tenant's unwrapped keys, with the subkeys made from them: the data key version new seals use
 * (`version`, `encryption`), every version still held (`encryptionFor`), and the keyed-hash keys
 * (made from the tenant's root key, which does not rotate: fingerprints and search indexes stay
 * valid across rotations).
 */
export interface TenantKey {
  /** The version new seals use. */
  readonly version: number
  /** Encrypts token fields (AES-256-GCM) under `version`; made once, reused by every seal and open. */
  readonly encryption: KeyObject
  /** The encryption key of `version`, when it is held. */
  encryptionFor(version: number): KeyObject | undefined
  /** Keys for keyed hashes (fingerprints, search indexes), one per purpose, each made once. */
  hmacKey(purpose: string): KeyObject
}

/** The encryption subkey of one data key (HKDF-SHA-256). */
export function encryptionKeyOf(dataKey: Uint8Array): KeyObject {
  return createSecretKey(
    Buffer.from(hkdfSync('sha256', dataKey, Buffer.alloc(0), 'tokenvault:token-fields', 32)),
  )
}

/** The keyed-hash subkeys of a root key, each derived (HKDF-SHA-256) once and kept. */
export function hmacKeysOf(rootKey: Uint8Array): (purpose: string) => KeyObject {
  const root = Buffer.from(rootKey)
  const hmacKeys = new Map<string, KeyObject>()
  return (purpose) => {
    let key = hmacKeys.get(purpose)
    if (!key) {
      key = createSecretKey(
        Buffer.from(hkdfSync('sha256', root, Buffer.alloc(0), `tokenvault:hmac:${purpose}`, 32)),
      )
      hmacKeys.set(purpose, key)
    }
    return key
  }
}

/** The subkeys of one data key that is both root and version 1 (a tenant from before versioned keys). */
export function tenantKey(dataKey: Uint8Array): TenantKey {
  const encryption = encryptionKeyOf(dataKey)
  return {
    version: 1,
    encryption,
    encryptionFor: (version) => (version === 1 ? encryption : undefined),
    hmacKey: hmacKeysOf(dataKey),
  }
}

/**
 * The header of a versioned ciphertext: 4 marker bytes, then the version (uint32, big-endian).
 * Before versioned keys a ciphertext was IV ‖ ciphertext ‖ tag, read as version 1; one of those
 * whose random IV starts with the marker (one in 2³²) still opens: the legacy reading is tried
 * when the versioned one fails.
 */
const MARKER = Buffer.from([0x00, 0x74, 0x76, 0x6b])
const HEADER_BYTES = MARKER.length + 4

/** The additional authenticated data of a versioned ciphertext: the caller's, and the version. */
const versionedAad = (aad: string, version: number) =>
  Buffer.from(`${aad}\u0000key-version:${version}`, 'utf8')

/**
 * The data-key version named by a sealed value's header (its base64 or bytes); 1 for a ciphertext
 * from before versioned keys. Reads the header only: nothing is decrypted.
 */
export function sealedVersion(sealed: string | Uint8Array): number {
  const head = typeof sealed === 'string' ? Buffer.from(sealed.slice(0, 12), 'base64') : sealed
  if (!hasMarker(head)) return 1
  return Buffer.from(head.buffer, head.byteOffset, head.byteLength).readUInt32BE(MARKER.length)
}

/**
 * Encrypts one JSON value under the key's current version: header (marker, version) ‖ IV ‖
 * ciphertext ‖ tag, as base64; `aad` (binding tenant, record and field) and the version are its
 * additional authenticated data, so a ciphertext relabelled with another version does not open.
 */
export function sealValue(key: TenantKey, value: unknown, aad: string): string {
  return sealText(key, JSON.stringify(value), aad)
}

/** `sealValue` of a value already serialized: `text` is its JSON. */
export function sealText(key: TenantKey, text: string, aad: string): string {
  return sealUtf8(key, Buffer.from(text, 'utf8'), aad)
}

/** `sealText` of the text whose UTF-8 bytes are `utf8`. */
export function sealUtf8(key: TenantKey, utf8: Uint8Array, aad: string): string {
  return sealVersioned(key, utf8, aad).toString('base64')
}

/** `sealUtf8` in two turns: encrypted in this one, encoded as base64 in the next (`nextTurn`). */
export async function sealUtf8InSteps(key: TenantKey, utf8: Uint8Array, aad: string): Promise<string> {
  const sealed = sealVersioned(key, utf8, aad)
  await nextTurn()
  return sealed.toString('base64')
}

/** Header (marker, version) ‖ IV ‖ ciphertext ‖ tag of `plain` under the key's current version, in one buffer. */
function sealVersioned(key: TenantKey, plain: Uint8Array, aad: string): Buffer {
  const out = sealBytes(key.encryption, plain, versionedAad(aad, key.version), HEADER_BYTES)
  MARKER.copy(out)
  out.writeUInt32BE(key.version, MARKER.length)
  return out
}

/**
 * What `sealValue` made (under `opening`, which holds its version) sealed again under `sealing`'s
 * current version with the same `aad`, its plaintext never decoded or parsed: what re-encryption
 * does, with the fewest copies. Throws as `openValue` does.
 */
export function resealValue(
  opening: TenantKey,
  sealing: TenantKey,
  sealed: string | Uint8Array,
  aad: string,
): string {
  return sealVersioned(sealing, openPlain(opening, sealed, aad), aad).toString('base64')
}

/**
 * Decrypts what `sealValue` made (its base64, or the bytes it names), under the version its header
 * names, or a ciphertext from before versioned keys under version 1; throws when the version is not
 * held or the key, the AAD or the bytes don't match.
 */
export function openValue(key: TenantKey, sealed: string | Uint8Array, aad: string): unknown {
  return parsedPlain(openPlain(key, sealed, aad))
}

/**
 * The string whose JSON text is `plain` when that text has no escape in it (`"`, no backslash,
 * `"`): its bytes between the quotes, decoded once; undefined for any other text.
 */
const bareJsonString = (plain: Buffer): string | undefined =>
  plain.length >= 2 && plain[0] === 0x22 && plain[plain.length - 1] === 0x22 && plain.indexOf(0x5c) === -1
    ? plain.toString('utf8', 1, plain.length - 1)
    : undefined

/**
 * The value whose JSON text is `plain` (UTF-8, as `sealValue` wrote it). A string without an escape
 * is its bytes between the quotes, decoded once: no copy of the whole text made to parse it (a
 * 900 KB value is one large string to the garbage collector, not two) and no parse. JSON text has
 * no raw `"`, control character or lone surrogate inside a string; each is written with a
 * backslash, so a text without one decodes to what `JSON.parse` answers.
 */
function parsedPlain(plain: Buffer): unknown {
  return bareJsonString(plain) ?? JSON.parse(plain.toString('utf8'))
}

/**
 * `openValue` in bounded steps with a turn of the event loop (`nextTurn`) between two, so other
 * calls run while a large value opens: its base64 decoded and its bytes decrypted `step` bytes at
 * a time, then the plaintext decoded to text, then parsed, each in a turn of its own (a string
 * without an escape is decoded alone, `bareJsonString`). The plaintext is used only once the tag
 * checked out. A value the stepped reading does not open (a legacy ciphertext, a version not held,
 * bytes that don't match) is left to `openValue` itself, so the answer and the failures are the
 * same.
 */
export async function openValueInSteps(
  key: TenantKey,
  sealed: string | Uint8Array,
  aad: string,
  step: number,
): Promise<unknown> {
  let plain: Buffer | undefined
  try {
    const bytes = typeof sealed === 'string' ? await decodedInSteps(sealed, step) : sealed
    const version = hasMarker(bytes) ? sealedVersion(bytes) : 0
    const k = version === 0 ? undefined : key.encryptionFor(version)
    if (k) plain = await openBytesInSteps(k, bytes.subarray(HEADER_BYTES), versionedAad(aad, version), step)
  } catch {}
  if (plain === undefined) return openValue(key, sealed, aad)
  await nextTurn()
  const bare = bareJsonString(plain)
  if (bare !== undefined) return bare
  const text = plain.toString('utf8')
  await nextTurn()
  return JSON.parse(text)
}

/** `text` (base64) decoded about `step` bytes at a time, a turn between two steps. */
async function decodedInSteps(text: string, step: number): Promise<Buffer> {
  const out = Buffer.allocUnsafe(Buffer.byteLength(text, 'base64'))
  // Whole groups of 4 characters (3 bytes): each piece decodes on its own.
  const chars = Math.ceil(step / 3) * 4
  let at = 0
  for (let from = 0; from < text.length; from += chars) {
    if (from > 0) await nextTurn()
    at += out.write(text.slice(from, from + chars), at, 'base64')
  }
  return out.subarray(0, at)
}

/** `openBytes` decrypting `step` bytes at a time, a turn between two; throws as it does. */
async function openBytesInSteps(key: KeyObject, sealed: Uint8Array, aad: Uint8Array, step: number) {
  if (sealed.length < IV_BYTES + TAG_BYTES) throw new Error('sealed value too short')
  const bytes = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength)
  const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES))
  decipher.setAAD(aad)
  decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES))
  const end = bytes.length - TAG_BYTES
  const out = Buffer.allocUnsafe(end - IV_BYTES)
  let at = 0
  for (let from = IV_BYTES; from < end; from += step) {
    if (from > IV_BYTES) await nextTurn()
    at += decipher.update(bytes.subarray(from, Math.min(end, from + step))).copy(out, at)
  }
  at += decipher.final().copy(out, at)
  return out.subarray(0, at)
}

/** The plaintext bytes of what `sealValue` made (see `openValue`). */
function openPlain(key: TenantKey, sealed: string | Uint8Array, aad: string): Buffer {
  const bytes = typeof sealed === 'string' ? Buffer.from(sealed, 'base64') : sealed
  if (hasMarker(bytes)) {
    const version = sealedVersion(bytes)
    const k = key.encryptionFor(version)
    try {
      if (!k) throw new Error(`data key version ${version} is not held`)
      return openBytes(k, bytes.subarray(HEADER_BYTES), versionedAad(aad, version))
    } catch (error) {
      // One legacy ciphertext in 2³² starts with the marker: read as legacy before failing.
      const legacy = key.encryptionFor(1)
      if (!legacy) throw error
      try {
        return openBytes(legacy, bytes, Buffer.from(aad, 'utf8'))
      } catch {
        throw error
      }
    }
  }
  const legacy = key.encryptionFor(1)
  if (!legacy) throw new Error('data key version 1 is not held')
  return openBytes(legacy, bytes, Buffer.from(aad, 'utf8'))
}

/**
 * Encrypts bytes under the key's current version, as `sealText` does a string: header ‖ IV ‖
 * ciphertext ‖ tag, as base64, with `aad` and the version as additional authenticated data.
 */
export function sealBinary(key: TenantKey, bytes: Uint8Array, aad: string): string {
  return sealVersioned(key, bytes, aad).toString('base64')
}

/** Decrypts what `sealBinary` made; throws when the version is not held or anything does not match. */
export function openBinary(key: TenantKey, sealed: string, aad: string): Buffer {
  const bytes = Buffer.from(sealed, 'base64')
  if (!hasMarker(bytes)) throw new Error('not a versioned ciphertext')
  const version = sealedVersion(bytes)
  const k = key.encryptionFor(version)
  if (!k) throw new Error(`data key version ${version} is not held`)
  return openBytes(k, bytes.subarray(HEADER_BYTES), versionedAad(aad, version))
}

function hasMarker(bytes: Uint8Array): boolean {
  if (bytes.length < HEADER_BYTES) return false
  for (let i = 0; i < MARKER.length; i++) if (bytes[i] !== MARKER[i]) return false
  return true
}

/**
 * HMAC-SHA-256 of `value` under the tenant's key for `purpose`, as base64url. A value given in
 * parts is hashed as their concatenation, without making it: a large part is never copied into a
 * second string to be hashed.
 */
export function keyedHash(key: TenantKey, purpose: string, value: string | readonly string[]): string {
  const mac = createHmac('sha256', key.hmacKey(purpose))
  for (const part of typeof value === 'string' ? [value] : value) mac.update(part, 'utf8')
  return mac.digest('base64url')
}

/** A new random data key (32 bytes). */
export function newDataKey(): Buffer {
  return randomBytes(32)
}
