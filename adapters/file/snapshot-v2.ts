import { MemoryState, type StateRecords } from '../../src/store/memory-state.js'
import { crc32 } from './crc32.js'

/**
 * Snapshots of versions 1 and 2, which earlier versions wrote: a header line, then the whole state
 * as one JSON body (`MemoryState.records()`), with `bytes` and `crc32` of the body in the header.
 * Version 1 lists under `locks` each token an open transaction lists, with the id of the
 * transaction holding its lock or null. They still load; new snapshots are version 3.
 */

/** A version 1 body: `locks` as `[tenant_id, token id, holder or null]`. */
interface SnapshotV1 extends Omit<StateRecords, 'locks'> {
  locks: [string, string, string | null][]
}

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
] as const

/** Checks and loads a version 1 or 2 snapshot whose header line (already parsed) ends at `newline`. */
export function restoreWholeSnapshot(
  data: Buffer,
  newline: number,
  header: { version?: unknown; bytes?: unknown; crc32?: unknown },
  fail: (why: string) => Error,
): MemoryState {
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
