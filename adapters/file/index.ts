export type { Durability, FileStore, FileStoreOptions, FileStoreStats } from './options.js'
export { fileStore } from './store.js'
