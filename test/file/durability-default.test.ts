import { fileURLToPath } from 'node:url'
import { describe, expect } from 'vitest'
import { commitWindow, itTraces, trace } from './strace.js'

// The default durability as callers get it, with no option: `fileStore({ path })` and the CLI's
// `--store file:PATH` sync data.mdb before a write is acknowledged (seen in the system calls, see
// ./strace.ts; test/file/durability.test.ts shows that 'none' is told apart).

const DEFAULT_CHILD = fileURLToPath(new URL('./default-sync-child.ts', import.meta.url))

describe('file store durability by default, seen in the system calls', () => {
  for (const how of ['fileStore', 'cli'])
    itTraces(
      `${how === 'cli' ? 'the CLI (--store file:PATH)' : 'fileStore({ path })'} syncs data.mdb before acknowledging a write`,
      async () => {
        const { events, dataFile, out } = await trace(DEFAULT_CHILD, how)
        expect(out).toContain('ack')
        const seen = commitWindow(events, dataFile)
        expect(seen.writes, 'the commit wrote to data.mdb').toBeGreaterThan(0)
        expect(seen.syncs, 'a sync of data.mdb between the write and its acknowledgement').toBeGreaterThan(0)
        expect(seen.unsynced, 'writes to data.mdb left unsynced at the acknowledgement').toBe(0)
      },
      60_000,
    )
})
