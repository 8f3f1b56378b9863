import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { pendingResealed } from './key-pending.js'

describe('kept idempotency answers and staged transaction writes follow the data-key versions', () => {
  it('memory store: a create repeated and a transaction committed after the old version is retired answer and commit, none left under version 1', async () => {
    await pendingResealed(memoryStore())
  })

  it('file store: a create repeated and a transaction committed after the old version is retired answer and commit, none left under version 1', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tokenvault-key-pending-'))
    try {
      await pendingResealed(await fileStore({ path: dir }))
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  }, 60_000)
})
