import type { Store } from '../store/index.js'
import type { Sealing } from './sealing.js'
import type { Keyring } from './tenant-keyring.js'

/** What a sweep step needs: the store as stored (sealed records), the keyring, sealing without read rules. */
export interface RekeyDeps {
  store: Store
  keyring: Keyring
  sealing: Sealing
  now: () => string
  /**
   * The turn the sweep awaits before each of its bounded steps: the service's `backgroundTurn`,
   * which waits while its calls are in flight (a bounded number of turns), so a call waits behind
   * one step at most.
   */
  turn: () => Promise<void>
}
