/**
 * `tokenvault/testing`: what a test suite needs to prove a store correct and to test against the
 * vault. Vitest (and, for the equivalence harness, fast-check) are optional peer dependencies: the
 * suites register their tests with vitest. `tokenvault/testing/vault` holds the test vault alone,
 * without vitest (for Jest and other runners).
 */

export type { StateRecords as ReferenceRecords } from '../src/store/memory-state.js'
export { MemoryState as ReferenceModel } from '../src/store/memory-state.js'
export type { StoreReads } from '../src/store/model-reads.js'
export { modelReads } from '../src/store/model-reads.js'
export type { EquivalenceHarness } from './store/equivalence.js'
export { storeEquivalence } from './store/equivalence.js'
export { app, formula, LATER, NOW, session, T, token, tx, U } from './store/records.js'
export type { StoreHarness } from './store/suite.js'
export { storeContract } from './store/suite.js'
export type { TestRole, TestVault, TestVaultOptions } from './vault.js'
export { createTestVault, loadFixture } from './vault.js'
