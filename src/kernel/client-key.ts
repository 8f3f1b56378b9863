/**
 * A client encryption key as stored (`POST /keys`): an X25519 key pair made in the vault. The
 * public half is handed to a browser, which encrypts token data to it as a compact JWE
 * (`ECDH-ES` with `A256GCM`, `kid` the key's id); the private half never leaves the vault. The
 * sealed store seals `private_key` at rest under the tenant's data key, bound to the key's tenant
 * and id, as it seals token data; every other field is in the clear.
 */
export interface StoredClientKey {
  id: string
  tenant_id: string
  /** The public key: the 32 bytes of the X25519 point, base64url (a JWK's `x`). */
  public_key: string
  /** The private key: the 32-byte X25519 scalar, base64url (a JWK's `d`); sealed at rest. */
  private_key: string
  created_by: string
  created_at: string
  /** When the key stops decrypting (at most a year after it was made). */
  expires_at: string
}
