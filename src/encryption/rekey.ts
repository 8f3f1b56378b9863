import type { OutboxEntry, Reactor, StoredProxy, StoredToken, Tenant, TenantKeys } from '../kernel/index.js'
import { ServiceError } from '../kernel/index.js'
import type { Check, Op } from '../store/index.js'
import { clientKeyVersions } from './client-key-sealing.js'
import { documentVersions } from './document-sealing.js'
import { sealedVersion } from './keyring.js'
import { openOutbox, outboxVersions, sealOutbox } from './outbox-sealing.js'
import { openProxy, sealProxy } from './proxy-sealing.js'
import type { RekeyDeps } from './rekey-deps.js'
import { resealAnswers, resealIntents, resealStaged } from './rekey-pending.js'
import { openReactor, resealToken, type Sealing, sealedPayload, sealReactor } from './sealing.js'
import { type Keyring, keysOf } from './tenant-keyring.js'

/** Where a tenant's re-encryption sweep stands after one step. */
export interface RekeyProgress {
  tenantId: string
  /** The version every record is being re-sealed under (the current one). */
  to: number
  /** Records re-sealed since the sweep began (across restarts: its place is on the tenant record). */
  done: number
  /** Records this step looked at (at most the batch size) and re-sealed. */
  scanned: number
  resealed: number
  /** Records a concurrent write changed first (they are on the current version already: skipped). */
  raced: number
  /** Records that fail their integrity check: left as they are, counted. */
  unreadable: number
  /** The tenant's tokens (expired ones included): what `done` counts towards on a first pass. */
  total: number
  /** The versions the tenant still holds. */
  versions: number[]
  /** True once a whole pass found every record on `to` and the older versions were retired. */
  finished: boolean
  /**
   * When the pass is over but began too soon after the rotation to be sure no other process still
   * seals under an older version (`2 × refreshMs`): a new pass may begin at this time (ISO).
   */
  retireAt?: string
}

export type { RekeyDeps } from './rekey-deps.js'

/** Any time before every expiry: counting "now" at this instant skips no token. */
const DAWN = '0001-01-01T00:00:00.000Z'

/** Whether a stored value (a token's `data`, a reactor's configuration) is sealed under `version`. */
function sealedUnder(value: unknown, version: number): boolean {
  const payload = sealedPayload(value)
  return payload !== undefined && sealedVersion(payload) === version
}

/**
 * One bounded step of the tenant's re-encryption sweep: reads the next `batch` tokens after the
 * sweep's place, re-seals those not under the current version (each write guarded by
 * `token.unchanged`, so a concurrent update wins and is kept), and moves the place on the tenant
 * record. At the end of a pass it re-seals the tenant's reactors and, when the pass began at least
 * `2 × refreshMs` after the rotation, retires every older version. Safe to stop at any point and
 * run again (it resumes from the place stored).
 */
export async function rekeyStep(deps: RekeyDeps, tenantId: string, batch: number): Promise<RekeyProgress> {
  const limit = Math.max(1, Math.min(10_000, Math.floor(batch)))
  const tenant = await deps.store.getTenant(tenantId)
  if (!tenant) throw new ServiceError('not_found', 'tenant not found')
  const keys = keysOf(tenant)
  if (keys.destroyed_at !== undefined)
    throw new ServiceError('conflict', `tenant ${tenantId}'s keys were destroyed`)
  const sweep =
    keys.sweep?.to === keys.current ? keys.sweep : { to: keys.current, done: 0, started_at: deps.now() }
  // Counted once a pass (a count may cost a scan on some stores), kept with the sweep's place.
  const total =
    sweep.total ?? (await deps.store.listTokens(tenantId, { offset: 0, limit: 1, now: DAWN })).total
  const outcome = await resealInPages(deps, tenantId, sweep, limit, total - sweep.done)
  const base = {
    tenantId,
    to: sweep.to,
    scanned: outcome.scanned,
    resealed: outcome.resealed,
    raced: outcome.raced,
    unreadable: outcome.unreadable,
    total,
  }
  const done = sweep.done + outcome.resealed
  if (outcome.walked === limit) {
    const next = { ...sweep, after: outcome.last!, done, total }
    const written = await placeSweep(deps.keyring, tenantId, sweep.to, next)
    return { ...base, done, versions: versionsOf(written), finished: false }
  }
  await resealReactors(deps, tenantId, sweep.to)
  await resealProxies(deps, tenantId, sweep.to)
  await resealOutbox(deps, tenantId, sweep.to)
  const pending = await resealAnswers(deps, tenantId, sweep.to)
  for (const v of await resealStaged(deps, tenantId, sweep.to)) pending.add(v)
  for (const v of await resealIntents(deps, tenantId, sweep.to)) pending.add(v)
  return finishPass(deps, tenant, keys, { ...sweep, done }, base, pending)
}

/** The end of a pass: retire the older versions if the pass began late enough, else wait for that. */
async function finishPass(
  deps: RekeyDeps,
  tenant: Tenant,
  keys: TenantKeys,
  sweep: NonNullable<TenantKeys['sweep']>,
  base: Omit<RekeyProgress, 'done' | 'versions' | 'finished'>,
  pending: Set<number>,
): Promise<RekeyProgress> {
  const retireAt = new Date(Date.parse(keys.rotated_at) + 2 * deps.keyring.rules.refreshMs).toISOString()
  if (sweep.started_at < retireAt) {
    // Too early: a process that read the keys before the rotation may still seal under an older
    // version. Once it is time, a new pass begins from the start.
    const now = deps.now()
    const next = now >= retireAt ? { to: sweep.to, done: sweep.done, started_at: now } : sweep
    const written = await placeSweep(deps.keyring, tenant.id, sweep.to, next)
    return { ...base, done: sweep.done, versions: versionsOf(written), finished: false, retireAt }
  }
  // A proxy configuration a concurrent change kept from being re-sealed, or that does not open,
  // keeps the version it is under, so it stays as readable as it was.
  const kept = await proxyVersions(deps, tenant.id)
  // Kept answers and staged writes that do not open, or that a transaction's changes kept from being re-sealed.
  for (const v of pending) kept.add(v)
  for (const v of await outboxKept(deps, tenant.id)) kept.add(v)
  for (const v of await clientKeyVersions(deps.store, tenant.id)) kept.add(v)
  // Documents are not re-sealed: the versions their chunks are under stay.
  for (const v of await documentVersions(deps.store, tenant.id)) kept.add(v)
  const written = await deps.keyring.update(tenant.id, async (t, k) => {
    if (k.current !== sweep.to) return null
    const { sweep: _sweep, ...rest } = k
    const versions = k.versions.filter((v) => v.version === k.current || kept.has(v.version))
    return { ...t, keys: { ...rest, versions } }
  })
  const finished = keysOf(written).current === sweep.to
  return { ...base, done: sweep.done, versions: versionsOf(written), finished }
}

/** The data-key versions the tenant's proxy configurations are sealed under. */
async function proxyVersions(deps: RekeyDeps, tenantId: string): Promise<Set<number>> {
  const versions = new Set<number>()
  const PAGE = 100
  for (let offset = 0; ; offset += PAGE) {
    const page = await deps.store.listProxies(tenantId, { offset, limit: PAGE })
    for (const proxy of page.items) {
      const payload = sealedPayload(proxy.configuration)
      if (payload !== undefined) versions.add(sealedVersion(payload))
    }
    if (page.items.length < PAGE) return versions
  }
}

/** The data-key versions the tenant's outbox entries are still sealed under (a raced or unreadable one keeps its version). */
async function outboxKept(deps: RekeyDeps, tenantId: string): Promise<Set<number>> {
  const versions = new Set<number>()
  const PAGE = 100
  let after: string | undefined
  for (;;) {
    const page = await deps.store.listOutbox(tenantId, { ...(after ? { after } : {}), limit: PAGE })
    for (const entry of page) for (const v of outboxVersions(entry)) versions.add(v)
    if (page.length < PAGE) return versions
    after = page[page.length - 1]!.id
  }
}

const versionsOf = (tenant: Tenant) => keysOf(tenant).versions.map((v) => v.version)

/**
 * Stores the sweep's place (only while `to` is still current: a newer rotation starts a new sweep).
 * Like the re-seals, with `deferSync` (see `DEFER_SYNC`).
 */
function placeSweep(keyring: Keyring, tenantId: string, to: number, sweep: NonNullable<TenantKeys['sweep']>) {
  return keyring.update(
    tenantId,
    async (t, k) => (k.current === to ? { ...t, keys: { ...k, sweep } } : null),
    DEFER_SYNC,
  )
}

/**
 * The sweep's re-seals and its place are written with `deferSync` (the file store acknowledges
 * them once in the file, unsynced, so a read's audit entry never waits for a chunk's sync): a power
 * loss or an operating-system crash may undo the last of them, which leaves those records under
 * their older version, still held, and the place further back, so the sweep re-seals them again.
 * Nothing is retired before they are durable: the retirement at the end of a pass is a synced
 * write, after every re-seal of the pass, and a synced commit makes every commit before it durable
 * (the file store's commits apply in order, and its sync covers the whole file). A seal
 * reservation, which must never go back, stays synced. A SIGKILL loses nothing of them.
 */
const DEFER_SYNC = true

/** A token opened and sealed again under the current version; null when it fails its integrity check. */
async function resealed(s: Sealing, stored: StoredToken): Promise<StoredToken | null> {
  try {
    return await resealToken(s, stored)
  } catch (error) {
    if (error instanceof ServiceError && error.code === 'unreadable') return null
    throw error
  }
}

/**
 * Tokens read, re-sealed and written together: a step's batch is cut into chunks of this many, with
 * a turn for other work between two (`deps.turn`: none while the service's calls are in flight, up
 * to a bound), and each chunk is a write of its own, so no
 * read of another tenant waits behind a whole batch's decryption, encryption or store write (a
 * memory store applies a write on this thread, and a file store commits the sweep's there too,
 * unsynced). 8, not 32: a chunk's read and write are turns of their own, and 32 records made them
 * the longest turns of the sweep (on the file store its write's turn took 0.20 ms at the median and
 * 5.4 ms at p90 against 0.15 and 0.37 ms for 8, same load), while the rate, once the file store's
 * chunk writes no longer waited for a sync each, stayed within the noise.
 */
export const REKEY_CHUNK = 8

/**
 * The most seals the sweep reserves at once (see `Keyring.reserveSeals`): what its pass has left to
 * re-seal, up to this many. A seal reservation is a synced write of the tenant record, and on the
 * file store every other write, a read's audit entry too, waits behind its sync (LMDB has one
 * writer): reserved `sealBlock` (1024) at a time, a pass of 20 000 tokens made 20 such waits
 * (4–56 ms each under load), and they made the p99 of another tenant's get. A crash or the
 * process's end loses the unused part, at most this many of a version's 3 865 470 566.
 */
export const REKEY_RESERVE_MAX = 65_536

/**
 * Token ids a step reads at once, in a turn of its own (a read of 500 took about a millisecond on
 * the file store, the longest turn of the sweep after its seal reservations).
 */
export const REKEY_ID_PAGE = 64

/**
 * Walks the next `limit` token ids after the sweep's place, `REKEY_ID_PAGE` a read (each read
 * after a turn of its own, the first too: a step begins behind the service's calls), and re-seals
 * those not under its version, `REKEY_CHUNK` at a time with a turn between two chunks. One chunk's
 * write at a time: a store that commits writes together (the file store) then never has more than
 * one chunk of the sweep in a commit another tenant's write waits behind. Before the first re-seal,
 * it reserves the seals the pass has left (`left`, at least the rest of the page; at most
 * `REKEY_RESERVE_MAX`). Answers the ids walked, the last of them, and what it did.
 */
async function resealInPages(
  deps: RekeyDeps,
  tenantId: string,
  sweep: NonNullable<TenantKeys['sweep']>,
  limit: number,
  left: number,
) {
  const total = { walked: 0, last: sweep.after, scanned: 0, resealed: 0, raced: 0, unreadable: 0 }
  let reserved = false
  for (let page: string[] = []; total.walked < limit; ) {
    const ask = Math.min(REKEY_ID_PAGE, limit - total.walked)
    await deps.turn()
    const after = total.last
    page = await deps.store.findTokenIds(tenantId, { ...(after ? { after } : {}), limit: ask })
    for (let at = 0; at < page.length; at += REKEY_CHUNK) {
      await deps.turn()
      const tokens = await deps.store.getTokens(tenantId, page.slice(at, at + REKEY_CHUNK))
      const stale = tokens.filter((t) => !sealedUnder(t.data, sweep.to))
      if (stale.length && !reserved) {
        reserved = true
        const want = Math.max(page.length - at, left)
        await deps.keyring.reserveSeals(tenantId, Math.min(REKEY_RESERVE_MAX, want))
      }
      add(total, tokens.length, await resealTokens(deps, stale))
    }
    total.walked += page.length
    if (page.length) total.last = page[page.length - 1]!
    if (page.length < ask) break
  }
  return total
}

/** Adds a chunk's outcome to a step's. */
function add(
  total: { scanned: number; resealed: number; raced: number; unreadable: number },
  scanned: number,
  outcome: { resealed: number; raced: number; unreadable: number },
): void {
  total.scanned += scanned
  total.resealed += outcome.resealed
  total.raced += outcome.raced
  total.unreadable += outcome.unreadable
}

/**
 * What re-sealing a record costs in one turn of the event loop, counted in bytes of its sealed
 * payload plus this many for the record itself (a cipher made to open it and one to seal it, its
 * copy and its guard, whatever its size, cost about what a few kilobytes of payload do): two small
 * records share a turn, a third waits for the next.
 */
export const REKEY_RECORD_COST = 1536

/**
 * At most this many bytes (each record counted as its sealed payload plus `REKEY_RECORD_COST`) are
 * opened and sealed again in one turn of the event loop; a record larger than this alone takes a
 * turn of its own. A waiting call of another tenant then runs after at most this much work (on a
 * memory store, which never leaves the microtask queue, nothing else would let it).
 */
export const REKEY_TURN_BYTES = 4096

/** What `stored` costs to re-seal, in the units of `REKEY_TURN_BYTES`. */
function resealCost(stored: StoredToken): number {
  const payload = sealedPayload(stored.data)
  const bytes = payload === undefined ? 0 : typeof payload === 'string' ? payload.length : payload.byteLength
  return REKEY_RECORD_COST + bytes
}

/**
 * Re-seals `stale` (stored tokens) in one write, each guarded by `token.unchanged` on the record
 * read; when a concurrent write changed one, each is written alone, so only the changed ones are
 * left (their new record is the concurrent write's, sealed under the current version). The
 * re-sealing takes a turn of the event loop every `REKEY_TURN_BYTES` (see `resealCost`), and the
 * write one of its own.
 */
async function resealTokens(deps: RekeyDeps, stale: StoredToken[]) {
  let unreadable = 0
  let spent = 0
  const pairs: { check: Check; op: Op }[] = []
  for (const stored of stale) {
    const cost = resealCost(stored)
    if (spent > 0 && spent + cost > REKEY_TURN_BYTES) {
      await deps.turn()
      spent = 0
    }
    spent += cost
    const token = await resealed(deps.sealing, stored)
    if (!token) {
      unreadable++
      continue
    }
    pairs.push({
      check: { check: 'token.unchanged', tenant_id: stored.tenant_id, id: stored.id, token: stored },
      op: { op: 'token.put', token },
    })
  }
  if (!pairs.length) return { resealed: 0, raced: 0, unreadable }
  await deps.turn()
  const all = await deps.store.write({
    checks: pairs.map((p) => p.check),
    ops: pairs.map((p) => p.op),
    deferSync: DEFER_SYNC,
  })
  if (all.ok) return { resealed: pairs.length, raced: 0, unreadable }
  let written = 0
  for (const p of pairs)
    if ((await deps.store.write({ checks: [p.check], ops: [p.op], deferSync: DEFER_SYNC })).ok) written++
  return { resealed: written, raced: pairs.length - written, unreadable }
}

/**
 * Re-seals the tenant's proxy configurations not under `to`, each guarded by `proxy.unchanged` on
 * the proxy read: a concurrent change wins (it was sealed under the current version). A proxy that
 * does not open, or that a concurrent change kept from being re-sealed, is left as it is (its
 * version is then kept, see `finishPass`).
 */
async function resealProxies(deps: RekeyDeps, tenantId: string, to: number): Promise<void> {
  const PAGE = 100
  for (let offset = 0; ; offset += PAGE) {
    const page = await deps.store.listProxies(tenantId, { offset, limit: PAGE })
    for (const stored of page.items) {
      if (sealedUnder(stored.configuration, to)) continue
      let proxy: StoredProxy
      try {
        proxy = await sealProxy(deps.sealing, await openProxy(deps.sealing, stored))
      } catch {
        continue
      }
      await deps.store.write({
        checks: [{ check: 'proxy.unchanged', tenant_id: tenantId, id: stored.id, proxy: stored }],
        ops: [{ op: 'proxy.put', proxy }],
      })
    }
    if (page.items.length < PAGE) return
    await deps.turn()
  }
}

/**
 * Re-seals the tenant's outbox entries (an asynchronous react's arguments and answer, a callback's
 * body) with a field not under `to`, each guarded by `outbox.unchanged` on the entry read: a
 * concurrent claim or result wins, and that entry keeps its version (see `finishPass`).
 */
async function resealOutbox(deps: RekeyDeps, tenantId: string, to: number): Promise<void> {
  const PAGE = 100
  let after: string | undefined
  for (;;) {
    const page = await deps.store.listOutbox(tenantId, { ...(after ? { after } : {}), limit: PAGE })
    for (const stored of page) {
      if (outboxVersions(stored).every((v) => v === to)) continue
      let entry: OutboxEntry
      try {
        entry = await sealOutbox(deps.sealing, await openOutbox(deps.sealing, stored))
      } catch {
        continue
      }
      await deps.store.write({
        checks: [{ check: 'outbox.unchanged', tenant_id: tenantId, id: stored.id, entry: stored }],
        ops: [{ op: 'outbox.put', entry }],
      })
    }
    if (page.length < PAGE) return
    after = page[page.length - 1]!.id
    await deps.turn()
  }
}

/** Re-seals the tenant's reactor configurations not under `to`, each guarded by `reactor.unchanged`. */
async function resealReactors(deps: RekeyDeps, tenantId: string, to: number): Promise<void> {
  const PAGE = 100
  for (let offset = 0; ; offset += PAGE) {
    const page = await deps.store.listReactors(tenantId, { offset, limit: PAGE })
    for (const stored of page.items) {
      if (sealedUnder(stored.configuration, to)) continue
      let reactor: Reactor
      try {
        reactor = await sealReactor(deps.sealing, await openReactor(deps.sealing, stored))
      } catch {
        continue
      }
      await deps.store.write({
        checks: [{ check: 'reactor.unchanged', tenant_id: tenantId, id: stored.id, reactor: stored }],
        ops: [{ op: 'reactor.put', reactor }],
      })
    }
    if (page.items.length < PAGE) return
  }
}
