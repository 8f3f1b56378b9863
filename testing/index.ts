/**
 * `tokenvault/testing`: what a test suite needs to test against the vault — the test vault,
 * fixtures, the reference model and record builders. It imports no peer dependency, so it loads in
 * any runner (vitest, Jest in ESM or CommonJS mode, node:test). The store conformance suite lives
 * in `tokenvault/testing/store` (needs vitest) and the equivalence harness in
 * `tokenvault/testing/equivalence` (needs vitest and fast-check).
 */

export { modelReads } from '../adapters/memory/model-reads.js'
export type { StateRecords as ReferenceRecords } from '../adapters/memory/state.js'
export { MemoryState as ReferenceModel } from '../adapters/memory/state.js'
export type { StoreReads } from '../src/store/index.js'
export {
  SIGNATURE_HEADER,
  SIGNATURE_VERSION_HEADER,
  stableStringify,
  TEST_WEBHOOK_PUBLIC_KEY,
  verifyWebhookSignature,
} from '../src/webhooks/index.js'
export type {
  CallerAccess,
  Canary,
  Exposure,
  ExposureBudget,
  ExposureRow,
  LeakEncoding,
  LeakFinding,
  Leaks,
  LeakWatch,
  RuleUse,
  UsedAccess,
  VaultMatchers,
  WatchOptions,
} from './insight/index.js'
export { LeakError, vaultMatchers } from './insight/index.js'
export type { ExpectedFailures, JournalMatchers } from './journal-matchers.js'
export { journalMatchers, NotBuiltError } from './journal-matchers.js'
export type { LogKit } from './logs.js'
export { ContractModel } from './store/model.js'
export { app, formula, LATER, NOW, session, T, token, tx, U } from './store/records.js'
export type { ListeningVault, TestRole, TestVault, TestVaultOptions } from './vault.js'
export { createTestVault, loadFixture } from './vault.js'
export type { ReceivedDelivery, WebhookKit } from './webhooks.js'
