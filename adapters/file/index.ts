export type {
  Durability,
  FileStore,
  FileStoreHooks,
  FileStoreOptions,
  FileStoreStats,
  FileStoreStep,
  RecoveryProgress,
  SyncMethod,
} from './options.js'
export { COMPACTION_STEPS } from './options.js'
export { fileStore } from './store.js'
