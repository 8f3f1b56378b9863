import { fileURLToPath } from 'node:url'
import { describe, expect } from 'vitest'
import { commitWindow, itTraces, trace } from './strace.js'

// Durability observed in the system calls (see ./strace.ts): a sync of data.mdb between the write
// and its acknowledgement, and none with durability 'none' (so the test can tell), nor for a write
// of audit entries only, which is acknowledged once in the file (docs/audit-log.md), nor for one
// marked deferSync (the re-encryption sweep's: docs/key-lifecycle.md).

const SYNC_CHILD = fileURLToPath(new URL('./sync-child.ts', import.meta.url))

describe('file store durability, seen in the system calls', () => {
  itTraces(
    "acknowledges a write only after the data file is synced ('fsync', the default)",
    async () => {
      const { events, dataFile, out } = await trace(SYNC_CHILD, 'fsync')
      expect(out).toContain('ack')
      const seen = commitWindow(events, dataFile)
      expect(seen.syncs, 'a sync of data.mdb between the write and its acknowledgement').toBeGreaterThan(0)
      expect(seen.unsynced, 'writes to data.mdb left unsynced at the acknowledgement').toBe(0)
    },
    60_000,
  )

  itTraces(
    "tells the difference: with durability 'none' nothing is synced before the acknowledgement",
    async () => {
      const { events, dataFile, out } = await trace(SYNC_CHILD, 'none')
      expect(out).toContain('ack')
      const seen = commitWindow(events, dataFile)
      expect(seen.writes, 'the commit wrote to data.mdb').toBeGreaterThan(0)
      expect(seen.syncs).toBe(0)
      expect(seen.unsynced).toBeGreaterThan(0)
    },
    60_000,
  )

  itTraces(
    "acknowledges a write of audit entries only (a read's) once written to the file, unsynced, even with 'fsync'",
    async () => {
      const { events, dataFile, out } = await trace(SYNC_CHILD, 'entries')
      expect(out).toContain('ack')
      const seen = commitWindow(events, dataFile)
      // In the file before the acknowledgement (a SIGKILL keeps it), without waiting for a sync.
      expect(seen.writes, 'the commit wrote to data.mdb').toBeGreaterThan(0)
      expect(seen.syncs).toBe(0)
    },
    60_000,
  )

  itTraces(
    "acknowledges a write marked deferSync (the re-encryption sweep's) once written to the file, unsynced, even with 'fsync'",
    async () => {
      const { events, dataFile, out } = await trace(SYNC_CHILD, 'deferred')
      expect(out).toContain('ack')
      const seen = commitWindow(events, dataFile)
      expect(seen.writes, 'the commit wrote to data.mdb').toBeGreaterThan(0)
      expect(seen.syncs).toBe(0)
    },
    60_000,
  )
})
