/**
 * The most bytes of stored token data (and masks, see `storedBytes`) one page of `listTokens`
 * holds: a store ends the page before the token that would pass it (a page always holds its first
 * token), so no page of large tokens is read, opened and answered whole. The core answers a page
 * that came back short with a 400 naming the bound.
 */
export const STORE_PAGE_BYTES = 4 * 1024 * 1024

/** Keeps a page's items within `STORE_PAGE_BYTES`: `fits(token)` takes it, or says the page is full. */
export class PageFill {
  private taken = 0
  private count = 0
  fits(token: { data?: unknown; mask?: unknown }): boolean {
    const bytes = storedBytes(token)
    if (this.count > 0 && this.taken + bytes > STORE_PAGE_BYTES) return false
    this.taken += bytes
    this.count++
    return true
  }
}

/**
 * How many bytes a token's `data` and `mask` take as a store holds them, without opening them: a
 * sealed field (`{ $sealed }`: IV, ciphertext and tag, as base64 or as bytes) by its ciphertext's
 * length, anything else by the length of its JSON. What stores answer as a head's `stored_bytes`.
 */
export function storedBytes(token: { data?: unknown; mask?: unknown }): number {
  return fieldBytes(token.data) + fieldBytes(token.mask)
}

function fieldBytes(value: unknown): number {
  if (value === undefined) return 0
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const sealed = (value as { $sealed?: unknown }).$sealed
    if (sealed instanceof Uint8Array) return sealed.length
    // Base64: three bytes in four characters, less one byte per `=` of padding (the exact length).
    if (typeof sealed === 'string') return Math.floor((sealed.length * 3) / 4) - padding(sealed)
  }
  return JSON.stringify(value)?.length ?? 0
}

/** How many `=` pad the end of a base64 string (0, 1 or 2). */
function padding(base64: string): number {
  if (base64.endsWith('==')) return 2
  return base64.endsWith('=') ? 1 : 0
}

/**
 * The bytes sealing adds around a value: the 8-byte header naming the data-key version (see
 * src/encryption/keyring.ts), then AES-256-GCM's 12-byte IV and 16-byte tag.
 */
const SEAL_OVERHEAD = 8 + 12 + 16

/**
 * The bytes `storedBytes` counts for a token whose `data` and `mask` are still open (a staged
 * write the sealed store has opened): the sealed store seals them together as the UTF-8 JSON of
 * `[data]` or `[data, mask]`, after a version header and an IV and before a tag. So a staged token takes the same place in a
 * page's byte budget as it will once committed.
 */
export function sealedBytes(token: { data?: unknown; mask?: unknown }): number {
  const fields = token.mask === undefined ? [token.data] : [token.data, token.mask]
  return SEAL_OVERHEAD + Buffer.byteLength(JSON.stringify(fields), 'utf8')
}
