/**
 * `tokenvault/testing/store`: the store conformance suite, `storeContract(harness)`, which registers
 * its tests with vitest (an optional peer dependency: install it to use this entry point).
 */

export type { StoreHarness } from './store/suite.js'
export { storeContract } from './store/suite.js'
