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
  sealValue,
  tenantKey,
  toProvider,
} from './keyring.js'
export { Keyring, publicTenant, sealedStore } from './sealed-store.js'
export { sealedPayload } from './sealing.js'
