import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { everyKindResealed } from './key-kinds.js'

describe('every sealed record kind is re-sealed before its old data-key version is retired', () => {
  it('memory store: tokens, reactor and proxy configurations and outbox entries read after the retirement, none left under version 1', async () => {
    await everyKindResealed(memoryStore())
  })

  it('file store: tokens, reactor and proxy configurations and outbox entries read after the retirement, none left under version 1', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tokenvault-key-kinds-'))
    try {
      await everyKindResealed(await fileStore({ path: dir }))
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  }, 60_000)
})
