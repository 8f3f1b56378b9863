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
    // Base64: three bytes in four characters.
    if (typeof sealed === 'string') return Math.floor((sealed.length * 3) / 4)
  }
  return JSON.stringify(value)?.length ?? 0
}
