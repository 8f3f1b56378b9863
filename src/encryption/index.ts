// The public face of this folder: what other folders of src/ import (they import nothing else
// from it). Written by `node scripts/relayout.mjs` from the exports of the files beside it: run
// it again after adding or removing an export.

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
export { Keyring, publicTenant, sealedPayload, sealedStore } from './sealed-store.js'
