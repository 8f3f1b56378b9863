import { ABORT, TransactionFlags } from 'lmdb'
import type { Check, Op, WriteResult } from '../../src/store/index.js'
import { StoreError } from '../../src/store/index.js'
import { applyOps } from './apply.js'
import { holds } from './checks.js'
import { type Databases, openDatabases } from './env.js'
import { diskError, needsReopen } from './faults.js'
import type { Snapshot } from './reads.js'

/** How many ops one commit carries at most (more wait for the next): bounds the main thread's share. */
const GROUP_OPS = 1000

/** A write waiting for its commit. */
export interface Pending {
  checks: readonly Check[]
  ops: readonly Op[]
  resolve: (result: WriteResult) => void
  reject: (error: unknown) => void
  /** Set once a commit it was part of was dropped: it is applied in a child transaction of its own. */
  alone?: boolean
  /** The write may be acknowledged before it is synced (`Store.write`'s `deferSync`). */
  deferSync?: boolean
  /** Its token puts' records, made as it was queued (`tokenRecords`, or forwarded); null when it puts no token. */
  records: readonly (Uint8Array | undefined)[] | null
}

/** A write to queue: its checks and ops, its token records made already (`tokenRecords`). */
export interface ToQueue {
  checks: readonly Check[]
  ops: readonly Op[]
  records: readonly (Uint8Array | undefined)[] | null
  deferSync?: boolean | undefined
}

/** Queues `w` for the next group commit and answers once it is committed (see `flush`). */
export function queued(s: FileState, w: ToQueue): Promise<WriteResult> {
  return new Promise<WriteResult>((resolve, reject) => {
    const { checks, ops, records } = w
    s.queue.push({ checks, ops, records, resolve, reject, ...(w.deferSync ? { deferSync: true } : {}) })
    flush(s)
  })
}

/** The state of one open file store: its environment, its write queue, its health and counts. */
export interface FileState {
  readonly dir: string
  readonly durable: boolean
  readonly log: (line: string) => void
  /** How long (ms) the main thread applies one group before the rest waits for the next commit. */
  readonly applyMs: number
  dbs: Databases
  /** Bumped with every move of the read snapshot this store's commits and reopening cause (see `Snapshot`). */
  readonly snapshot: Snapshot
  closed: boolean
  healthy: boolean
  writes: number
  commits: number
  /** While set, the environment is being opened again after a fatal error; calls wait for it. */
  reopening: Promise<void> | null
  /** Writes queued for the next commit. */
  queue: Pending[]
  /** Whether a commit is under way (one at a time per process). */
  committing: boolean
}

/** The open databases, or a `StoreError` while the store is closed or reopening. */
export function use(s: FileState): Databases {
  if (s.closed) throw new StoreError('closed', `fileStore: the store at ${s.dir} is closed`)
  if (s.reopening) throw new StoreError('unavailable', 'fileStore: the store is reopening', { retryAfter: 1 })
  return s.dbs
}

/** Opens the environment again after a fatal error, retrying every second until it opens or the store closes. */
export function reopen(s: FileState): void {
  s.reopening ??= (async () => {
    const old = s.dbs
    await old.env.close().catch(() => {})
    old.release()
    for (;;) {
      try {
        s.dbs = await openDatabases(s.dir, s.durable)
        s.snapshot.moves++
        s.log(`fileStore: ${s.dir}: reopened after a fatal error`)
        return
      } catch (error) {
        s.log(`fileStore: ${s.dir}: reopening failed, retrying in 1 s: ${(error as Error).message}`)
        await new Promise((r) => setTimeout(r, 1000).unref())
        if (s.closed) return
      }
    }
  })().finally(() => {
    s.reopening = null
  })
}

/** The tenant a write is for: its first op's (or check's) `tenant_id`, `''` for none (tenants, official formulas). */
function tenantOf(write: { checks: readonly Check[]; ops: readonly Op[] }): string {
  const first = (write.ops[0] ?? write.checks[0]) as unknown as Record<string, unknown> | undefined
  if (!first) return ''
  if (typeof first['tenant_id'] === 'string') return first['tenant_id']
  for (const value of Object.values(first)) {
    const nested = value as { tenant_id?: unknown } | null
    if (nested && typeof nested === 'object' && typeof nested.tenant_id === 'string') return nested.tenant_id
  }
  return ''
}

/** One write's checks and ops: no op applies unless every check holds. */
function apply(current: Databases, p: Pending): WriteResult {
  for (const c of p.checks) if (!holds(current, c)) return { ok: false, failed: c }
  applyOps(current, p.ops, p.records)
  return { ok: true }
}

/**
 * The writes of the next commit, taken from the queue: at most about GROUP_OPS ops (the main
 * thread applies them while the commit waits), one write of each tenant in turn, each tenant's in
 * the order they came. So a tenant with thousands of writes queued holds another's back by at most
 * one commit, not by all of its own.
 */
function nextGroup(s: FileState): Pending[] {
  const byTenant = new Map<string, Pending[]>()
  for (const p of s.queue) {
    const tenant = tenantOf(p)
    const own = byTenant.get(tenant)
    if (own) own.push(p)
    else byTenant.set(tenant, [p])
  }
  const lists = [...byTenant.values()]
  const group: Pending[] = []
  let ops = 0
  fill: for (let round = 0; group.length < s.queue.length; round++) {
    for (const list of lists) {
      const p = list[round]
      if (!p) continue
      if (group.length > 0 && ops + p.ops.length > GROUP_OPS) break fill
      group.push(p)
      ops += p.ops.length
    }
  }
  const taken = new Set(group)
  s.queue = s.queue.filter((p) => !taken.has(p))
  return group
}

/** What one commit took and answers: its group (`null` until LMDB ran it) and a result per write applied. */
interface Commit {
  current: Databases
  group: Pending[] | null
  results: (WriteResult | { error: unknown })[]
}

/**
 * The body of a commit's transaction: takes the next group and applies it, write after write, for
 * at most `applyMs` (the rest goes back to the front of the queue). A write that throws drops the
 * whole transaction (`ABORT`) and sends the group back marked `alone`.
 */
function applyGroup(s: FileState, c: Commit): typeof ABORT | undefined {
  const group = nextGroup(s)
  c.group = group
  // The main thread applies the group while reads wait: past APPLY_MS the rest of the group
  // goes back to the front of the queue, for the next commit (`applyMs`), so no read waits much longer.
  const until = performance.now() + s.applyMs
  for (const p of group) {
    if (c.results.length > 0 && performance.now() > until) break
    if (p.alone) {
      try {
        c.results.push(c.current.env.transactionSync(() => apply(c.current, p)))
      } catch (error) {
        c.results.push({ error })
      }
      continue
    }
    try {
      c.results.push(apply(c.current, p))
    } catch {
      for (const q of group) q.alone = true
      s.queue.unshift(...group)
      c.group = []
      return ABORT
    }
  }
  if (c.results.length < group.length) s.queue.unshift(...group.splice(c.results.length))
  return undefined
}

/** Answers the writes of a commit that is on disk. */
function committed(s: FileState, c: Commit): void {
  // LMDB moved the read snapshot past this commit: what reads kept from the last one is stale.
  s.snapshot.moves++
  // An empty group: its transaction was dropped (`ABORT`), and its writes wait for the next.
  const done = c.group ?? []
  if (done.length === 0) return
  s.writes += done.length
  s.commits++
  if (!s.healthy) {
    s.healthy = true
    s.log(`fileStore: ${s.dir}: writes resumed`)
  }
  done.forEach((p, i) => {
    const r = c.results[i]!
    if ('error' in r) p.reject(r.error)
    else p.resolve(r)
  })
}

/** Fails the writes of a commit that did not reach the disk, and reopens the environment when it needs it. */
async function commitFailed(s: FileState, c: Commit, error: unknown): Promise<void> {
  s.snapshot.moves++
  // A transaction that failed before LMDB ran it fails the writes it would have taken.
  const failed = c.group ?? nextGroup(s)
  const commitError = (error as { commitError?: Promise<unknown> }).commitError
  const cause = commitError
    ? await commitError.then(
        () => error,
        (e: unknown) => e,
      )
    : error
  s.healthy = false
  s.log(
    `fileStore: ${s.dir}: a commit failed; writes resume once the disk takes them: ${(cause as Error)?.message}`,
  )
  if (needsReopen(cause)) reopen(s)
  const answer = diskError(cause, s.dir)
  for (const p of failed) p.reject(answer)
}

/**
 * Group commit: the writes queued when LMDB has begun the next write transaction go into it, and
 * are answered once that transaction's commit is on disk. The transaction is asked for as soon as
 * a write arrives while none is under way (or the one under way ends with writes queued); the
 * group is taken only once LMDB runs it, so every write that arrived meanwhile (while the previous
 * commit synced, or before the write thread began) joins it.
 *
 * The group applies inside one child transaction, write after write. An op that throws partway
 * through a write (LMDB refusing a key, say) would leave part of that write behind, so it drops the
 * whole child transaction (LMDB's `ABORT`: nothing of the group is committed) and the group goes
 * back to the front of the queue marked `alone`: the next commit applies each of those writes in
 * a child transaction of its own, so the failing one fails alone and whole and the others land.
 *
 * Audit entries alone (a read's) and writes marked `deferSync` (the re-encryption sweep's) are
 * committed at once without a sync instead, ahead of the writes queued with them that need their
 * sync (`commitUnsynced`): none of them waits for a commit's sync but the one under way when it
 * came. So a read's entry never waits for the sync of a sweep's chunk, nor for the synced commit
 * of another tenant's writes queued with it (they are as concurrent as any two writes queued
 * together: none was answered).
 */
export function flush(s: FileState, syncedNext = false): void {
  if (s.committing || s.queue.length === 0) return
  if (!syncedNext && s.queue.some(unsynced)) {
    commitUnsynced(s)
    return
  }
  s.committing = true
  const c: Commit = { current: s.dbs, group: null, results: [] }
  /** The commit: the group's transaction, or its refusal (an environment closing under it throws at once). */
  const commit = (run: () => unknown): Promise<unknown> => {
    try {
      return c.current.env.childTransaction(run)
    } catch (error) {
      return Promise.reject(error)
    }
  }
  commit(() => applyGroup(s, c))
    .then(
      () => committed(s, c),
      (error: unknown) => commitFailed(s, c, error),
    )
    .finally(() => {
      s.committing = false
      flush(s)
    })
}

/**
 * Whether a write only adds audit entries (no check, every op a `log.put`): the entries of reads
 * and of refusals, which change no data. A write that changes data carries its entries with it.
 */
function entriesOnly(p: Pending): boolean {
  return p.checks.length === 0 && p.ops.every((op) => op.op === 'log.put')
}

/** Whether a write may be acknowledged once in the file, before a sync: entries only, or marked `deferSync`. */
const unsynced = (p: Pending): boolean => p.deferSync === true || entriesOnly(p)

/** LMDB's own synchronous commit, without the sync: what `putSync` uses under overlapping sync. */
const UNSYNCED = TransactionFlags.SYNCHRONOUS_COMMIT | TransactionFlags.NO_SYNC_FLUSH

/**
 * Commits the queue's entries-only and `deferSync` writes (see `unsynced`) at once on this thread, in
 * a transaction LMDB commits to the file without syncing it, and answers them: what a write hands
 * the operating system outlives the process (a SIGKILL), and the next synced commit (any write
 * that changes data) makes it durable against a power loss too (`docs/audit-log.md`). Only while
 * no commit is under way (LMDB's write lock is free), so no read waits for another commit's sync.
 * The queue's other writes wait, in their order, for the synced commit that follows.
 */
function commitUnsynced(s: FileState): void {
  s.committing = true
  const synced = s.queue.filter((p) => !unsynced(p))
  if (synced.length > 0) s.queue = s.queue.filter(unsynced)
  const c: Commit = { current: s.dbs, group: null, results: [] }
  let done: Promise<void> = Promise.resolve()
  try {
    c.current.env.transactionSync(() => applyGroup(s, c), UNSYNCED)
    committed(s, c)
  } catch (error) {
    done = commitFailed(s, c, error)
  }
  // After `commitFailed` took its group (at once, before its first await): it fails only these.
  s.queue.push(...synced)
  // The writes that wait for their sync go next, whatever came meanwhile: never passed over twice.
  void done.finally(() => {
    s.committing = false
    flush(s, synced.length > 0)
  })
}
