// The public face of this folder: what other folders of src/ import (they import nothing else
// from it). Kept by hand: add a name when another folder needs it.

export type { KeyProvider, MasterKey, TenantKey, WrappedDataKey } from './keyring.js'
export {
  keyedHash,
  localMasterKey,
  newDataKey,
  openBytes,
  openValue,
  sealBytes,
  sealedVersion,
  sealValue,
  tenantKey,
  toProvider,
} from './keyring.js'
export type { RekeyProgress } from './rekey.js'
export { rekeyStep } from './rekey.js'
export { publicTenant, sealedStore } from './sealed-store.js'
export type { Sealing } from './sealing.js'
export { openToken, sealedPayload } from './sealing.js'
export type { DataKeyPolicy } from './tenant-keyring.js'
export { DEFAULT_DATA_KEY_POLICY, destroyedKeys, Keyring, keysOf } from './tenant-keyring.js'
