/**
 * A child process for the durability test. `DIR DURABILITY`: opens the file store, prints `ready`,
 * writes one token and prints `ack` once the write resolves, then closes the store and exits.
 * `DIR entries`: the same with durability 'fsync' and a write of one audit entry only (a read's).
 * `DIR deferred`: durability 'fsync' and the token's write marked `deferSync` (the re-encryption sweep's).
 */

import type { Durability } from '../../adapters/file/index.js'
import { fileStore } from '../../adapters/file/index.js'
import type { LogEntry } from '../../src/kernel/types.js'
import { put } from './fixtures.js'

const [dir, durability] = process.argv.slice(2)
const entries = durability === 'entries'
const deferred = durability === 'deferred'
const store = await fileStore({
  path: dir!,
  durability: entries || deferred ? 'fsync' : (durability as Durability),
})
const entry: LogEntry = {
  ...{ tenant_id: 't1', id: 'lane-1:000000000000', lane: 'lane-1', seq: 0, mac: 'm' },
  ...{ actor_type: 'application', entity_type: 'token', operation: 'read', message: 'Read a token' },
  ...{ outcome: 'success', created_at: '2026-01-01T00:00:00.000Z' },
}
process.stdout.write('ready\n')
const result = await store.write({
  ops: [entries ? { op: 'log.put', entry } : put('durable')],
  ...(deferred ? { deferSync: true } : {}),
})
process.stdout.write(result.ok ? 'ack\n' : 'refused\n')
await store.close()
