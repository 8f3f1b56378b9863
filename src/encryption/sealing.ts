import type { Json, Reactor, StagedWrite, StoredToken } from '../kernel/index.js'
import { nextTurn, ServiceError, utf8NeedsJsonEscape, withTokenFields } from '../kernel/index.js'
import type { Op } from '../store/index.js'
import { sealChunk } from './document-sealing.js'
import {
  keyedHash,
  openValue,
  openValueInSteps,
  resealValue,
  sealedVersion,
  sealUtf8,
  sealUtf8InSteps,
  sealValue,
  type TenantKey,
} from './keyring.js'

/**
 * How a sealed token field is stored: IV ‖ ciphertext ‖ GCM tag, as base64 (what this store writes)
 * or as the bytes themselves (a store may keep them so: the file store's `tokenCodec`).
 */
type Sealed = { $sealed: string | Uint8Array }

/**
 * The ciphertext a sealed field holds (`{ $sealed }` and nothing else): its base64 or its bytes;
 * `undefined` for anything else. A store that keeps sealed fields its own way (the file store's
 * `tokenCodec`) recognizes them with this.
 */
export function sealedPayload(value: unknown): string | Uint8Array | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined
  const sealed = (value as { $sealed?: unknown }).$sealed
  if (typeof sealed !== 'string' && !(sealed instanceof Uint8Array)) return undefined
  return Object.keys(value).length === 1 ? sealed : undefined
}

const isSealed = (value: unknown): value is Sealed => sealedPayload(value) !== undefined

/** The additional authenticated data of a token's sealed fields: its tenant and id. */
const aadOf = (tenantId: string, tokenId: string) => `tokenvault:token:v1:${tenantId}:${tokenId}`

/** The additional authenticated data of an idempotency record's sealed answer: its tenant and id. */
const answerAad = (r: { tenant_id: string; id: string }) => `tokenvault:idempotency:v1:${r.tenant_id}:${r.id}`

/** The additional authenticated data of a reactor's sealed configuration: its tenant and id. */
const reactorAad = (r: { tenant_id: string; id: string }) => `tokenvault:reactor:v1:${r.tenant_id}:${r.id}`

/** The error an unreadable reactor configuration answers with: it names the reactor, never its bytes. */
const unreadableReactor = (id: string) =>
  new ServiceError(
    'unreadable',
    `the stored configuration of reactor ${id} fails its integrity check and can't be read`,
  )

/** The error every unreadable token answers with: it names the token, never its bytes. */
const unreadable = (id: string) =>
  new ServiceError('unreadable', `the stored data of token ${id} fails its integrity check and can't be read`)

/** What sealing and opening need: the tenants' keys and the service's rules that are not about sealing. */
export interface Sealing {
  /**
   * The tenant's keys, at once when they are already unwrapped; with `version`, keys that hold that
   * data-key version (read again when the ones held do not: another process rotated).
   */
  keyOf(tenantId: string, version?: number): TenantKey | Promise<TenantKey>
  /** The key to seal one value under, that seal counted (see `Keyring.sealKey`). */
  sealKeyOf(tenantId: string): TenantKey | Promise<TenantKey>
  /** The purpose of the keyed hashes of evaluated search indexes. */
  searchIndexPurpose: string
  /** Every token opened goes through this before it is answered. */
  asRead(token: StoredToken): StoredToken
}

/**
 * `data` and `mask` sealed together, in one ciphertext kept as `data`; `mask` is not stored apart.
 * Evaluated search indexes (`search_index_values`) are stored only as their keyed hashes.
 */
function sealWith(s: Sealing, key: TenantKey, token: StoredToken): StoredToken | Promise<StoredToken> {
  const json = sealedJson(token.data, token.mask)
  const aad = aadOf(token.tenant_id, token.id)
  if (json.length <= LARGE_SEAL_BYTES) return sealedWith(s, key, token, sealUtf8(key, json, aad))
  // A large value is encrypted, then encoded, each in a turn of its own after the one that
  // serialized it: others' requests run between.
  return nextTurn()
    .then(() => sealUtf8InSteps(key, json, aad))
    .then((sealed) => sealedWith(s, key, token, sealed))
}

/**
 * Values of more bytes of JSON than this are encrypted and encoded in turns of their own (about
 * half a millisecond each at 400 KB), so other tenants' requests wait behind less.
 */
const LARGE_SEAL_BYTES = 64 * 1024

/**
 * The UTF-8 bytes of `JSON.stringify([data])` (`[data, mask]` with a mask), what is sealed. Data
 * that is a well-formed string of more than `LARGE_SEAL_BYTES` characters (so of more bytes too:
 * only a value that seals in turns) with nothing to escape is written as its bytes between the
 * brackets and quotes: the same bytes, with no second string
 * as large as it made (a 400 KB create made five; each is young garbage that brings the next
 * collection nearer) and in about a third of the time.
 */
function sealedJson(data: Json, mask: Json | undefined): Buffer {
  const serialized = () => Buffer.from(JSON.stringify(mask === undefined ? [data] : [data, mask]), 'utf8')
  if (typeof data !== 'string' || data.length <= LARGE_SEAL_BYTES || !data.isWellFormed()) return serialized()
  const tail = mask === undefined ? '"]' : `",${JSON.stringify(mask)}]`
  const size = Buffer.byteLength(data, 'utf8')
  const out = Buffer.allocUnsafe(2 + size + Buffer.byteLength(tail, 'utf8'))
  out.write('["', 0, 'latin1')
  out.write(data, 2, 'utf8')
  if (utf8NeedsJsonEscape(out.subarray(2, 2 + size))) return serialized()
  out.write(tail, 2 + size, 'utf8')
  return out
}

/** `token` with `sealed` (its data and mask, sealed by `sealUtf8`) as its `data`. */
function sealedWith(s: Sealing, key: TenantKey, token: StoredToken, sealed: string): StoredToken {
  const values = token.search_index_values
  const data = { $sealed: sealed }
  return withTokenFields(token, {
    data,
    mask: undefined,
    search_index_values: undefined,
    search_index_hashes:
      values === undefined
        ? token.search_index_hashes
        : values.map((value) => keyedHash(key, s.searchIndexPurpose, value)),
  })
}

/** `token` as stored: sealed under its tenant's key (no await when the key is already unwrapped). */
export function sealToken(s: Sealing, token: StoredToken): StoredToken | Promise<StoredToken> {
  const key = s.sealKeyOf(token.tenant_id)
  return key instanceof Promise ? key.then((k) => sealWith(s, k, token)) : sealWith(s, key, token)
}

/** `token` opened with `key`, as the caller reads it (`asRead`). */
function openWith(s: Sealing, key: TenantKey, token: StoredToken): StoredToken {
  // `mask` is sealed inside `data` and never stored apart: one beside sealed data was put there
  // by hand (a ciphertext moved into the mask, say) and is refused, not answered.
  if (token.mask !== undefined) throw unreadable(token.id)
  let fields: unknown
  try {
    fields = openValue(key, (token.data as Sealed).$sealed, aadOf(token.tenant_id, token.id))
  } catch {
    throw unreadable(token.id)
  }
  return withOpened(s, token, fields)
}

/** `openWith` opening in steps of `step` sealed bytes (`openValueInSteps`). */
async function openWithInSteps(s: Sealing, key: TenantKey, token: StoredToken, step: number) {
  if (token.mask !== undefined) throw unreadable(token.id)
  let fields: unknown
  try {
    fields = await openValueInSteps(
      key,
      (token.data as Sealed).$sealed,
      aadOf(token.tenant_id, token.id),
      step,
    )
  } catch {
    throw unreadable(token.id)
  }
  return withOpened(s, token, fields)
}

/** `token` with its opened `fields` (`[data]` or `[data, mask]`) in place, as the caller reads it. */
function withOpened(s: Sealing, token: StoredToken, fields: unknown): StoredToken {
  if (!Array.isArray(fields) || fields.length < 1 || fields.length > 2) throw unreadable(token.id)
  const full = withTokenFields(token, {
    data: fields[0] as Json,
    mask: fields.length === 2 ? (fields[1] as Json) : undefined,
  })
  return s.asRead(full)
}

/** A stored token opened, as the caller reads it. */
export function openToken(s: Sealing, token: StoredToken): StoredToken | Promise<StoredToken> {
  // Legacy plaintext (written before encryption at rest) reads as it is.
  if (!isSealed(token.data)) return s.asRead(token)
  const key = s.keyOf(token.tenant_id, sealedVersion((token.data as Sealed).$sealed))
  return key instanceof Promise ? key.then((k) => openWith(s, k, token)) : openWith(s, key, token)
}

/**
 * A stored token opened as `openToken` opens it; one holding more than `step` sealed bytes opens in
 * steps of `step` with a turn of the event loop between two (`openValueInSteps`), so another
 * tenant's call runs while a large token opens.
 */
export async function openTokenInSteps(s: Sealing, token: StoredToken, step: number): Promise<StoredToken> {
  const sealed = sealedPayload(token.data)
  if (sealed === undefined || sealed.length <= step) return openToken(s, token)
  const key = await s.keyOf(token.tenant_id, sealedVersion(sealed))
  return openWithInSteps(s, key, token, step)
}

/**
 * A stored token sealed again under its tenant's current version (that seal counted), its sealed
 * `data` reopened and resealed as bytes, never decoded or parsed (`resealValue`): what
 * re-encryption does, with the fewest copies. Legacy plaintext is sealed as `sealToken` does.
 * Throws `unreadable` as `openToken` does.
 */
export async function resealToken(s: Sealing, stored: StoredToken): Promise<StoredToken> {
  const payload = sealedPayload(stored.data)
  if (payload === undefined) return sealToken(s, await openToken(s, stored))
  if (stored.mask !== undefined) throw unreadable(stored.id)
  const opening = await s.keyOf(stored.tenant_id, sealedVersion(payload))
  const sealing = await s.sealKeyOf(stored.tenant_id)
  let sealed: string
  try {
    sealed = resealValue(opening, sealing, payload, aadOf(stored.tenant_id, stored.id))
  } catch {
    throw unreadable(stored.id)
  }
  return withTokenFields(stored, { data: { $sealed: sealed } })
}

/** A reactor as stored: its configuration sealed, bound to its tenant and id. */
export async function sealReactor(s: Sealing, reactor: Reactor): Promise<Reactor> {
  const key = await s.sealKeyOf(reactor.tenant_id)
  const sealed = { $sealed: sealValue(key, reactor.configuration, reactorAad(reactor)) }
  return { ...reactor, configuration: sealed }
}

/** A stored reactor opened. */
export async function openReactor(s: Sealing, reactor: Reactor): Promise<Reactor> {
  // Legacy plaintext (written before configurations were sealed) reads as it is.
  if (!isSealed(reactor.configuration)) return reactor
  let configuration: unknown
  try {
    configuration = openValue(
      await s.keyOf(reactor.tenant_id, sealedVersion(reactor.configuration.$sealed)),
      reactor.configuration.$sealed,
      reactorAad(reactor),
    )
  } catch {
    throw unreadableReactor(reactor.id)
  }
  if (configuration === null || typeof configuration !== 'object' || Array.isArray(configuration)) {
    throw unreadableReactor(reactor.id)
  }
  return { ...reactor, configuration: configuration as Reactor['configuration'] }
}

/** An op as stored: the token, staged token, reactor configuration or idempotent answer it carries sealed. */
export async function sealOp(s: Sealing, op: Op): Promise<Op> {
  switch (op.op) {
    case 'token.put':
      return { ...op, token: await sealToken(s, op.token) }
    case 'staged.put': {
      const { token } = op.staged
      return token ? { ...op, staged: { ...op.staged, token: await sealToken(s, token) } } : op
    }
    case 'reactor.put':
      return { ...op, reactor: await sealReactor(s, op.reactor) }
    case 'document_chunk.put':
      return { ...op, chunk: await sealChunk(s, op.chunk) }
    case 'idempotency.put': {
      const { record } = op
      if (record.answer === undefined) return op
      const key = await s.sealKeyOf(record.tenant_id)
      return { ...op, record: { ...record, answer: sealValue(key, record.answer, answerAad(record)) } }
    }
    default:
      return op
  }
}

/** A staged record with its token opened (the record as stored when it stages a delete). */
export async function openStaged(s: Sealing, staged: StagedWrite): Promise<StagedWrite> {
  return staged.token ? { ...staged, token: await openToken(s, staged.token) } : staged
}

/** A stored idempotent answer opened; one that fails its integrity check is `unreadable`. */
export async function openAnswer(s: Sealing, record: { tenant_id: string; id: string; answer: string }) {
  let answer: unknown
  try {
    answer = openValue(
      await s.keyOf(record.tenant_id, sealedVersion(record.answer)),
      record.answer,
      answerAad(record),
    )
  } catch {
    answer = undefined
  }
  if (typeof answer !== 'string') {
    throw new ServiceError('unreadable', 'a stored idempotent answer fails its integrity check')
  }
  return answer
}
