import { compactDecrypt, decodeProtectedHeader, importJWK } from 'jose'
import type { Ctx } from '../call/index.js'
import type { Json } from '../kernel/index.js'
import { invalid, isJson } from '../kernel/index.js'

/**
 * The longest compact JWE taken, in characters, checked before anything is parsed: a token's data
 * as a browser encrypts it (the reference's elements encrypt `JSON.stringify(data)`) fits with
 * room to spare; the request body's own bound applies first.
 */
export const MAX_JWE_LENGTH = 1_048_576

/** The one algorithm pair the reference's elements encrypt with (`ECDH-ES` key agreement, `A256GCM`). */
const ALG = 'ECDH-ES'
const ENC = 'A256GCM'

/** A compact JWE: five base64url parts; the encrypted key part of `ECDH-ES` is empty. */
const COMPACT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/

/**
 * Every failure past the header's shape answers this one message: a JWE under another key, one
 * tampered with, one naming a key that is unknown, expired, deleted or another tenant's. Telling
 * them apart would let a caller probe keys and ciphertexts.
 */
const UNDECRYPTABLE = "can't be decrypted with a current client encryption key of the tenant"

/**
 * The JSON value a browser encrypted to one of the caller's tenant's client encryption keys, as
 * the reference's elements do: a compact JWE whose protected header names `alg` `ECDH-ES`, `enc`
 * `A256GCM` and, in `kid`, the key's id, whose plaintext is `JSON.stringify(data)`. `field` names
 * the input in a 400 (`validation_failed`); nothing is answered of the key or the plaintext.
 */
export async function decryptPayload(ctx: Ctx, jwe: unknown, field: string): Promise<Json> {
  if (typeof jwe !== 'string' || jwe.length > MAX_JWE_LENGTH || !COMPACT.test(jwe))
    throw invalid(field, `must be a compact JWE of at most ${MAX_JWE_LENGTH} characters`)
  let header: ReturnType<typeof decodeProtectedHeader>
  try {
    header = decodeProtectedHeader(jwe)
  } catch {
    throw invalid(field, 'must be a compact JWE: its protected header is not base64url JSON')
  }
  if (header.alg !== ALG || header.enc !== ENC)
    throw invalid(field, `must be encrypted with alg ${ALG} and enc ${ENC}`)
  if (typeof header.kid !== 'string' || header.kid.length === 0 || header.kid.length > 200)
    throw invalid(field, 'must name its client encryption key in the kid of its protected header')
  const key = await ctx.store.getClientKey(ctx.principal.tenantId, header.kid)
  if (key === null || key.expires_at <= ctx.now()) throw invalid(field, UNDECRYPTABLE)
  let text: string
  try {
    const privateKey = await importJWK(
      { kty: 'OKP', crv: 'X25519', x: key.public_key, d: key.private_key },
      ALG,
    )
    const { plaintext } = await compactDecrypt(jwe, privateKey, {
      keyManagementAlgorithms: [ALG],
      contentEncryptionAlgorithms: [ENC],
    })
    text = new TextDecoder('utf-8', { fatal: true }).decode(plaintext)
  } catch {
    throw invalid(field, UNDECRYPTABLE)
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw invalid(field, 'must encrypt a JSON value (the token data, as JSON.stringify writes it)')
  }
  if (!isJson(value)) throw invalid(field, 'must encrypt a JSON value nested at most 64 deep')
  return value
}
