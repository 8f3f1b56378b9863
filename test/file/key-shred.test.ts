import { cp } from 'node:fs/promises'
import { describe, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { shreddingHoldsOnCopies } from '../encryption/key-copies.js'
import { tempDir } from './helpers.js'

describe('crypto-shredding on the file store', () => {
  it('a copy of the files taken after reads nothing of the tenant; one taken before stops once the master key is rotated and retired', async () => {
    const dir = await tempDir()
    await shreddingHoldsOnCopies(
      () => fileStore({ path: dir }),
      async () => {
        const copy = await tempDir()
        await cp(dir, copy, { recursive: true })
        return () => fileStore({ path: copy })
      },
    )
  }, 60_000)
})
