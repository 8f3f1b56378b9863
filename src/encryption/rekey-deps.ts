import type { Store } from '../store/index.js'
import type { Sealing } from './sealing.js'
import type { Keyring } from './tenant-keyring.js'

/** What a sweep step needs: the store as stored (sealed records), the keyring, sealing without read rules. */
export interface RekeyDeps {
  store: Store
  keyring: Keyring
  sealing: Sealing
  now: () => string
}
