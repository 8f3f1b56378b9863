import type { MasterKey } from '../../src/encryption/index.js'
import type { Json, Token } from '../../src/kernel/index.js'
import type { Op, Store } from '../../src/store/index.js'
import { Accounting, type Exposure } from './accounting.js'
import { HeldPlaintexts } from './held.js'
import { createLeaks, type Leaks } from './leaks.js'
import { Principals } from './principals.js'
import { type UsedAccess, usedAccess } from './used-access.js'
import { watchedStore } from './watch-store.js'

/** The insight parts of one test vault: what it wires into its service, and what it offers the test. */
export interface VaultInsight {
  /** The store to give the service: every acknowledged write is recorded before it answers. */
  store: Store
  /** The observer to give the service (`ServiceOptions.observe`). */
  accounting: Accounting
  leaks: Leaks
  exposure(): Exposure
  usedAccess(): UsedAccess
  /** Takes in what the store held before the vault was made. */
  load(): Promise<void>
  /**
   * The insight of a fork of this vault over `store` (a fork of this store): the same leak index
   * (shared, in constant time), the same names and grants, and no exposure or used access yet.
   */
  fork(store: Store, create: (type: string, data: Json) => Promise<Token>): VaultInsight
}

/** What a fork starts from. */
interface Parts {
  held: HeldPlaintexts
  principals: Principals
}

/**
 * Builds the insight of a test vault over `store` (sealed by a service under `masterKey`):
 * `create` makes a canary token (with the private key); its calls are kept out of the accounting.
 */
export function vaultInsight(
  store: Store,
  masterKey: MasterKey,
  create: ((type: string, data: Json) => Promise<Token>) | null,
  from?: Parts,
): VaultInsight {
  const held = from?.held ?? new HeldPlaintexts(store, masterKey)
  const principals = from?.principals ?? new Principals()
  const accounting = new Accounting(principals)
  const record = async (ops: readonly Op[]) => {
    principals.record(ops)
    await held.record(ops)
  }
  const leaks = createLeaks({
    index: () => held.index(),
    create: async (type, data) => {
      if (!create) throw new Error('leaks.canary: this vault has no key to make tokens with')
      accounting.quiet++
      try {
        return await create(type, data)
      } finally {
        accounting.quiet--
      }
    },
    markCanary: (id) => held.canaries.add(id),
  })
  return {
    store: watchedStore(store, record),
    accounting,
    leaks,
    exposure: () => accounting.exposure(),
    usedAccess: () => usedAccess(principals, accounting.uses(), principals.applicationIds()),
    load: async () => {
      const dump = await store.dump()
      principals.load(dump)
      await held.load(dump)
    },
    fork: (forked, make) =>
      vaultInsight(forked, masterKey, make, { held: held.fork(forked), principals: principals.fork() }),
  }
}
