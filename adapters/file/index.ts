import { missingPeer } from '../optional-peer.js'
import type { FileStore, FileStoreOptions } from './options.js'

export type { Durability, FileStore, FileStoreOptions, FileStoreStats } from './options.js'

/**
 * A durable store in one directory, on LMDB (see `./store.ts` for its promises). Needs the optional
 * peer dependency `lmdb` (`npm install lmdb@^3`), loaded at the first call: without it this rejects
 * with an error (`code: 'ERR_MISSING_PEER'`) naming the package to install, and importing
 * `tokenvault/adapters/file` alone loads nothing of LMDB.
 */
export async function fileStore(options: FileStoreOptions): Promise<FileStore> {
  const store = await import('./store.js').catch((error: unknown) => {
    throw missingPeer(error, 'lmdb', '^3', 'fileStore')
  })
  return store.fileStore(options)
}
