import { MemoryState, type StateRecords } from '../../src/store/memory-state.js'
import { crc32 } from './crc32.js'

/**
 * Snapshots: the whole state as one file. A header line, then the body:
 *
 *   {"format":"tokenvault.snapshot","version":2,"generation":N,"bytes":B,"crc32":C}\n
 *   {"tenants":[...],...,"associations":[...],"transactions":[...],"locks":[...],...}
 *
 * `bytes` and `crc32` cover the body, which is `MemoryState.records()` as one `JSON.stringify`
 * writes it: records in the order the state keeps them, each parent's associations in link order,
 * and `locks` as `[tenant_id, token id, id of the transaction holding the lock]`. Loading is
 * `MemoryState.fromRecords` of the parsed body, so a restored state answers every read and check
 * as the original did.
 *
 * Version 1 (written before) still loads: its body has the same kinds, but lists under `locks` each
 * token an open transaction lists, with the id of the transaction holding its lock or null.
 */

const FORMAT = 'tokenvault.snapshot'
const VERSION = 2
const KINDS = [
  'tenants',
  'applications',
  'tokens',
  'associations',
  'transactions',
  'locks',
  'sessions',
  'formulas',
  'reactors',
  'idempotency',
] as const satisfies readonly (keyof StateRecords)[]
/** Fails to compile when `StateRecords` gains a kind that `KINDS` does not list. */
const everyKind: Exclude<keyof StateRecords, (typeof KINDS)[number]> extends never ? true : never = true
void everyKind

/** A version 1 body: `locks` as `[tenant_id, token id, holder or null]`. */
interface SnapshotV1 extends Omit<StateRecords, 'locks'> {
  locks: [string, string, string | null][]
}

/**
 * Serialises `state` as the snapshot of `generation`: one `JSON.stringify` of its records, with no
 * copy or sort. Synchronous, so no op changes the records while they are read.
 */
export function encodeSnapshot(state: MemoryState, generation: number): Buffer {
  const body = Buffer.from(JSON.stringify(state.records()))
  const header = { format: FORMAT, version: VERSION, generation, bytes: body.length, crc32: crc32(body) }
  return Buffer.concat([Buffer.from(`${JSON.stringify(header)}\n`), body])
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
  if (header.format !== FORMAT || (header.version !== 1 && header.version !== VERSION))
    throw fail(`not a version 1 or ${VERSION} tokenvault snapshot`)
  if (header.generation !== generation) throw fail(`header says generation ${String(header.generation)}`)
  const body = data.subarray(newline + 1)
  if (header.bytes !== body.length)
    throw fail(`body is ${body.length} bytes, header says ${String(header.bytes)}`)
  if (header.crc32 !== crc32(body)) throw fail('checksum mismatch')
  const records = JSON.parse(body.toString('utf8')) as Record<string, unknown>
  // Idempotency records came later: a snapshot from before them has none.
  records.idempotency ??= []
  for (const kind of KINDS) if (!Array.isArray(records[kind])) throw fail(`no "${kind}" list`)
  if (header.version === 1) {
    const v1 = records as unknown as SnapshotV1
    const locks = v1.locks.flatMap(([tenant, id, holder]) =>
      holder === null ? [] : [[tenant, id, holder] as const],
    )
    return MemoryState.fromRecords({ ...v1, locks })
  }
  return MemoryState.fromRecords(records as unknown as StateRecords)
}
