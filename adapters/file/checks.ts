import type { Database } from 'lmdb'
import type { IdempotencyRecord, StoredToken, TokenLock } from '../../src/kernel/index.js'
import { assertNever } from '../../src/kernel/index.js'
import type { Check } from '../../src/store/index.js'
import { termKey } from '../../src/store/index.js'
import { countKey } from './apply.js'
import type { Databases } from './env.js'
import { fits, key, prefix, read, termPart } from './keys.js'

/**
 * Whether two JSON values are equal as stored: object key order aside, and a key whose value is
 * `undefined` counts as absent (the stored side went through JSON, which drops it). Bytes (a
 * token's ciphertext) are equal when their bytes are.
 */
export function sameStored(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false
  // A token's ciphertext as bytes (`tokenCodec`).
  if (a instanceof Uint8Array || b instanceof Uint8Array)
    return a instanceof Uint8Array && b instanceof Uint8Array && Buffer.compare(a, b) === 0
  if (Array.isArray(a) !== Array.isArray(b)) return false
  if (Array.isArray(a)) {
    const bb = b as unknown[]
    return a.length === bb.length && a.every((item, i) => sameStored(item, bb[i]))
  }
  const oa = a as Record<string, unknown>
  const ob = b as Record<string, unknown>
  const ka = Object.keys(oa).filter((k) => oa[k] !== undefined)
  const kb = Object.keys(ob).filter((k) => ob[k] !== undefined)
  if (ka.length !== kb.length) return false
  return ka.every((k) => Object.hasOwn(ob, k) && sameStored(oa[k], ob[k]))
}

/** Whether a value is stored under `parts` (nothing decoded). */
export function exists(db: Database, ...parts: string[]): boolean {
  const k = key(...parts)
  return fits(k) && db.doesExist(k)
}

/** Whether any key starts with `parts`. */
export function anyUnder(db: Database, ...parts: string[]): boolean {
  for (const _ of db.getKeys({ ...prefix(...parts), limit: 1 })) return true
  return false
}

/** Ids of the tenant's unexpired tokens with this fingerprint, read from the terms index. */
export function withFingerprint(
  dbs: Databases,
  tenantId: string,
  fingerprint: string,
  now: string,
): string[] {
  const out: string[] = []
  const start = prefix(tenantId, termPart(termKey({ kind: 'fingerprint', value: fingerprint })))
  for (const k of dbs.terms.getKeys(start)) {
    const id = (k as Buffer).subarray(start.start.length).toString('utf8')
    const t = read<StoredToken>(dbs.tokens, tenantId, id)
    if (t !== undefined && (t.expires_at === undefined || t.expires_at > now)) out.push(id)
  }
  return out
}

/** Whether `c` holds on what the databases hold now (inside the write transaction, or a fresh read). */
export function holds(dbs: Databases, c: Check): boolean {
  switch (c.check) {
    case 'token.absent':
      return !exists(dbs.tokens, c.tenant_id, c.id)
    case 'token.present':
      return exists(dbs.tokens, c.tenant_id, c.id)
    case 'token.unlocked': {
      const lock = read<TokenLock>(dbs.locks, c.tenant_id, c.id)
      return lock === undefined || lock.transaction_id === c.except || lock.expires_at <= c.now
    }
    case 'lock.held':
      return read<TokenLock>(dbs.locks, c.tenant_id, c.token_id)?.transaction_id === c.transaction_id
    case 'links.within': {
      const known = new Set(c.links.map((l) => `${l.parent_id}\u0000${l.child_id}`))
      const children = prefix(c.tenant_id, c.token_id)
      for (const k of dbs.links.getKeys(children)) {
        const child = (k as Buffer).subarray(children.start.length).toString('utf8')
        if (!known.has(`${c.token_id}\u0000${child}`)) return false
      }
      for (const k of dbs.parents.getKeys(children)) {
        const parent = (k as Buffer).subarray(children.start.length).toString('utf8')
        if (!known.has(`${parent}\u0000${c.token_id}`)) return false
      }
      return true
    }
    case 'token.unchanged': {
      const stored = read(dbs.tokens, c.tenant_id, c.id)
      return stored !== undefined && sameStored(stored, c.token)
    }
    case 'transaction.unchanged': {
      const stored = read(dbs.transactions, c.tenant_id, c.id)
      return stored !== undefined && sameStored(stored, c.transaction)
    }
    case 'association.absent':
    case 'association.present': {
      const exists = read(dbs.links, c.tenant_id, c.parent_id, c.child_id) !== undefined
      return c.check === 'association.present' ? exists : !exists
    }
    case 'session.unchanged': {
      const stored = read(dbs.sessions, c.tenant_id, c.id)
      return stored !== undefined && sameStored(stored, c.session)
    }
    case 'formula.present':
      return read(dbs.formulas, c.tenant_id, c.id) !== undefined || read(dbs.formulas, '', c.id) !== undefined
    case 'formula.unused':
      return !anyUnder(dbs.uses, c.id)
    case 'reactor.unchanged': {
      const stored = read(dbs.reactors, c.tenant_id, c.id)
      return stored !== undefined && sameStored(stored, c.reactor)
    }
    case 'application.present':
      return read(dbs.applications, c.tenant_id, c.id) !== undefined
    case 'reactor.present':
      return read(dbs.reactors, c.tenant_id, c.id) !== undefined
    case 'application.unchanged': {
      const stored = read(dbs.applications, c.tenant_id, c.id)
      return stored !== undefined && sameStored(stored, c.application)
    }
    case 'idempotency.absent':
      return read(dbs.idempotency, c.tenant_id, c.id) === undefined
    case 'idempotency.claimed':
      return read<IdempotencyRecord>(dbs.idempotency, c.tenant_id, c.id)?.claim === c.claim
    case 'token.fingerprint_absent':
      return withFingerprint(dbs, c.tenant_id, c.fingerprint, c.now).length === 0
    case 'token_intent.present':
      return read(dbs.tokenIntents, c.tenant_id, c.id) !== undefined
    case 'webhook.present':
      return read(dbs.webhooks, c.tenant_id, c.id) !== undefined
    case 'outbox.unchanged': {
      const stored = read(dbs.outbox, c.tenant_id, c.id)
      return stored !== undefined && sameStored(stored, c.entry)
    }
    case 'proxy.unchanged': {
      const stored = read(dbs.proxies, c.tenant_id, c.id)
      return stored !== undefined && sameStored(stored, c.proxy)
    }
    case 'count.within':
      return ((dbs.meta.get(countKey(c.kind, c.tenant_id)) as number | undefined) ?? 0) <= c.max
    case 'tenant.unchanged': {
      const stored = read(dbs.tenants, c.tenant_id)
      return stored !== undefined && sameStored(stored, c.tenant)
    }
    default:
      return assertNever(c)
  }
}
