import { MemoryState } from '../../src/state.js'
import type { StoreDump } from '../../src/store.js'
import type { Association, StoredTransaction } from '../../src/types.js'
import { crc32 } from './crc32.js'

/**
 * Snapshots: the whole state as one file. A header line, then the body:
 *
 *   {"format":"tokenvault.snapshot","version":1,"generation":N,"bytes":B,"crc32":C}\n
 *   {"tenants":[...],...,"associations":[...],"locks":[...]}
 *
 * `bytes` and `crc32` cover the body. Associations are listed in link order per parent (which
 * `listChildren` returns), and `locks` names the transaction holding each token that an open
 * transaction lists, so a restored state answers every read and check as the original did.
 */

const FORMAT = 'tokenvault.snapshot'
const KINDS = [
  'tenants',
  'applications',
  'tokens',
  'associations',
  'transactions',
  'sessions',
  'formulas',
  'reactors',
] as const satisfies readonly (keyof StoreDump)[]

/** `[tenant_id, token id, id of the open transaction holding its lock, or null]`. */
type LockHolder = [string, string, string | null]

interface SnapshotBody extends StoreDump {
  locks: LockHolder[]
}

/** Associations of `dump`, reordered into link order for each parent. */
function linkOrder(state: MemoryState, dump: StoreDump): Association[] {
  const groups = new Map<string, Map<string, Association>>()
  for (const a of dump.associations) {
    const key = `${a.tenant_id}\u0000${a.parent_id}`
    const group = groups.get(key) ?? new Map<string, Association>()
    groups.set(key, group)
    group.set(a.child_id, a)
  }
  const ordered: Association[] = []
  for (const group of groups.values()) {
    const first = group.values().next().value as Association
    // `now: ''` skips no token: every `expires_at` sorts after the empty string.
    const page = state.listChildren(first.tenant_id, first.parent_id, {
      offset: 0,
      limit: group.size,
      now: '',
    })
    for (const child of page.items) {
      const a = group.get(child.id)
      if (a && group.delete(child.id)) ordered.push(a)
    }
    ordered.push(...group.values())
  }
  return ordered
}

/** Which open transaction holds each lock listed by an open transaction (probed through checks). */
function lockHolders(state: MemoryState, transactions: StoredTransaction[]): LockHolder[] {
  const candidates = new Map<string, { tenant: string; id: string; txs: string[] }>()
  for (const tx of transactions) {
    if (tx.state !== 'open') continue
    for (const id of tx.locks) {
      const key = `${tx.tenant_id}\u0000${id}`
      const entry = candidates.get(key) ?? { tenant: tx.tenant_id, id, txs: [] }
      entry.txs.push(tx.id)
      candidates.set(key, entry)
    }
  }
  const unlocked = (tenant: string, id: string, except: string) =>
    state.failedCheck([{ check: 'token.unlocked', tenant_id: tenant, id, now: '', except }]) === null
  const holders: LockHolder[] = []
  for (const { tenant, id, txs } of candidates.values()) {
    const holder = unlocked(tenant, id, '\u0000')
      ? null
      : (txs.find((tx) => unlocked(tenant, id, tx)) ?? null)
    holders.push([tenant, id, holder])
  }
  return holders
}

/** Serialises `state` as the snapshot of `generation`. */
export function encodeSnapshot(state: MemoryState, generation: number): Buffer {
  const dump = state.dump()
  for (const kind of Object.keys(dump)) {
    if (!(KINDS as readonly string[]).includes(kind)) {
      throw new Error(
        `fileStore: cannot snapshot records of kind "${kind}": the file store does not know them`,
      )
    }
  }
  const body: SnapshotBody = {
    ...dump,
    associations: linkOrder(state, dump),
    locks: lockHolders(state, dump.transactions),
  }
  const bodyBytes = Buffer.from(JSON.stringify(body))
  const header = { format: FORMAT, version: 1, generation, bytes: bodyBytes.length, crc32: crc32(bodyBytes) }
  return Buffer.concat([Buffer.from(`${JSON.stringify(header)}\n`), bodyBytes])
}

/** Rebuilds the locks map: each listed lock is held by its recorded holder, or by none. */
function restoreLocks(state: MemoryState, holders: LockHolder[]) {
  const free = new Map<string, string[]>()
  for (const [tenant, id, holder] of holders) {
    if (holder !== null)
      state.apply({ op: 'transaction.stage', tenant_id: tenant, id: holder, writes: [], locks: [id] })
    else free.set(tenant, [...(free.get(tenant) ?? []), id])
  }
  // A lock that no transaction holds any more: let a throwaway transaction take it, then delete that.
  for (const [tenant, ids] of free) {
    const id = '\u0000snapshot-restore'
    const transaction: StoredTransaction = {
      id,
      tenant_id: tenant,
      created_at: '',
      created_by: '',
      expires_at: '',
      state: 'open',
      writes: [],
      locks: ids,
    }
    state.apply({ op: 'transaction.put', transaction })
    state.apply({ op: 'transaction.delete', tenant_id: tenant, id })
  }
}

/** Parses and checks a snapshot file's bytes, and rebuilds the state it holds. Throws naming `file`. */
export function restoreSnapshot(data: Buffer, file: string, generation: number): MemoryState {
  const fail = (why: string) => new Error(`fileStore: snapshot ${file} is damaged: ${why}`)
  const newline = data.indexOf(0x0a)
  if (newline < 0) throw fail('no header line')
  let header: { format?: unknown; version?: unknown; generation?: unknown; bytes?: unknown; crc32?: unknown }
  try {
    header = JSON.parse(data.toString('utf8', 0, newline))
  } catch {
    throw fail('unreadable header line')
  }
  if (header.format !== FORMAT || header.version !== 1) throw fail('not a version 1 tokenvault snapshot')
  if (header.generation !== generation) throw fail(`header says generation ${String(header.generation)}`)
  const body = data.subarray(newline + 1)
  if (header.bytes !== body.length)
    throw fail(`body is ${body.length} bytes, header says ${String(header.bytes)}`)
  if (header.crc32 !== crc32(body)) throw fail('checksum mismatch')
  const snapshot = JSON.parse(body.toString('utf8')) as SnapshotBody
  const state = new MemoryState()
  for (const tenant of snapshot.tenants) state.apply({ op: 'tenant.put', tenant })
  for (const application of snapshot.applications) state.apply({ op: 'application.put', application })
  for (const token of snapshot.tokens) state.apply({ op: 'token.put', token })
  for (const association of snapshot.associations) state.apply({ op: 'association.put', association })
  for (const transaction of snapshot.transactions) state.apply({ op: 'transaction.put', transaction })
  restoreLocks(state, snapshot.locks)
  for (const session of snapshot.sessions) state.apply({ op: 'session.put', session })
  for (const formula of snapshot.formulas) state.apply({ op: 'formula.put', formula })
  for (const reactor of snapshot.reactors) state.apply({ op: 'reactor.put', reactor })
  return state
}
