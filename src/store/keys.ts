import type { StoredApplication } from '../kernel/index.js'

/**
 * Every key hash of an application: those of its `keys`, or for a record written before
 * applications held several keys, its one `key_hash`. Stores index an application under each.
 */
export function applicationKeyHashes(application: StoredApplication): string[] {
  if (application.keys) return application.keys.map((k) => k.key_hash)
  return application.key_hash === undefined ? [] : [application.key_hash]
}
