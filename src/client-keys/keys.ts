import { addYears } from 'date-fns/addYears'
import { exportJWK, generateKeyPair } from 'jose'
import * as v from 'valibot'
import { requirePermission } from '../applications/index.js'
import type { Ctx } from '../call/index.js'
import type { StoredClientKey } from '../kernel/index.js'
import { invalid, isoDateTime, newId, notFound, parse } from '../kernel/index.js'
import type { Op } from '../store/index.js'

/** How many client encryption keys one tenant may hold, expired ones included until deleted. */
export const MAX_CLIENT_KEYS_PER_TENANT = 50

/** `POST /keys`: the reference's request, `expires_at` optional (at most a year ahead). */
export const clientKeyInput = v.optional(
  v.nullable(v.strictObject({ expires_at: v.optional(v.nullable(isoDateTime)) })),
)
/** Body of `keys.create`. */
export type CreateClientKeyInput = v.InferInput<typeof clientKeyInput>

/** A key as `GET /keys` and `GET /keys/{id}` answer it: never a key's public or private half. */
export interface ShownClientKey {
  id: string
  /** The same id under node-sdk 5's name for it (`ClientEncryptionKeyMetadataResponse.keyId`). */
  key_id: string
  expires_at: string
}

/** A key as `POST /keys` answers it, the only answer that holds its public key. */
export interface CreatedClientKey extends ShownClientKey {
  /**
   * The X25519 public key as the reference answers it: its 32 bytes, base64, between PEM armor
   * lines. A browser strips the armor and encrypts to it (`ECDH-ES`, `A256GCM`, `kid` the id).
   */
  public_key_pem: string
}

const shown = (k: StoredClientKey): ShownClientKey => ({ id: k.id, key_id: k.id, expires_at: k.expires_at })

/** The PEM armor the reference wraps a key's raw 32 bytes in. */
function pemOf(publicKey: string): string {
  const b64 = Buffer.from(publicKey, 'base64url').toString('base64')
  return `-----BEGIN PUBLIC KEY-----\n${b64}\n-----END PUBLIC KEY-----`
}

/** The expiry asked for, checked against the call's time; absent: a year after it (the longest allowed). */
function expiryOf(ctx: Ctx, asked: string | null | undefined): string {
  const now = ctx.now()
  const latest = addYears(new Date(now), 1).toISOString()
  if (asked === undefined || asked === null) return latest
  if (asked <= now) throw invalid('expires_at', 'must be in the future')
  if (asked > latest) throw invalid('expires_at', 'must be at most one year ahead')
  return asked
}

/** The client encryption key operations (`/keys`), under `keys:*` permissions. */
export function clientKeyOperations(ctx: Ctx) {
  const tenant = ctx.principal.tenantId
  const mustGet = async (id: string) => {
    const k = await ctx.store.getClientKey(tenant, id)
    if (!k) throw notFound('key')
    return k
  }
  return {
    /**
     * Makes an X25519 key pair in the vault and answers its id, expiry and public key (this once).
     * The private key is sealed at rest and never answered. The tenant's expired keys are deleted
     * in the same write; at most `MAX_CLIENT_KEYS_PER_TENANT` keys are held.
     */
    async create(input?: CreateClientKeyInput): Promise<CreatedClientKey> {
      requirePermission(ctx.principal, 'keys:create')
      const q = parse(clientKeyInput, input)
      const expires_at = expiryOf(ctx, q?.expires_at)
      const held = await ctx.store.listClientKeys(tenant, {
        offset: 0,
        limit: MAX_CLIENT_KEYS_PER_TENANT + 1,
      })
      const expired = held.items.filter((k) => k.expires_at <= ctx.now())
      if (held.total - expired.length >= MAX_CLIENT_KEYS_PER_TENANT)
        throw invalid('key', `the tenant holds ${MAX_CLIENT_KEYS_PER_TENANT} keys, the most it may`)
      const pair = await generateKeyPair('ECDH-ES', { crv: 'X25519', extractable: true })
      const jwk = await exportJWK(pair.privateKey)
      if (typeof jwk.x !== 'string' || typeof jwk.d !== 'string') throw new Error('X25519 key export failed')
      const key: StoredClientKey = {
        id: newId(),
        tenant_id: tenant,
        public_key: jwk.x,
        private_key: jwk.d,
        created_by: ctx.principal.id,
        created_at: ctx.now(),
        expires_at,
      }
      const ops: Op[] = [
        ...expired.map((k): Op => ({ op: 'client_key.delete', tenant_id: tenant, id: k.id })),
        { op: 'client_key.put', key },
      ]
      await ctx.store.write({ ops })
      return { ...shown(key), public_key_pem: pemOf(key.public_key) }
    },
    /** The tenant's keys, oldest first (a bare array, as the reference answers). */
    async list(): Promise<ShownClientKey[]> {
      requirePermission(ctx.principal, 'keys:read')
      const page = await ctx.store.listClientKeys(tenant, {
        offset: 0,
        limit: MAX_CLIENT_KEYS_PER_TENANT + 1,
      })
      return page.items.map(shown)
    },
    async get(id: string): Promise<ShownClientKey> {
      requirePermission(ctx.principal, 'keys:read')
      return shown(await mustGet(id))
    },
    /** Deletes the key: a JWE made to it no longer decrypts. */
    async delete(id: string): Promise<void> {
      requirePermission(ctx.principal, 'keys:delete')
      await mustGet(id)
      await ctx.store.write({ ops: [{ op: 'client_key.delete', tenant_id: tenant, id }] })
    },
  }
}
