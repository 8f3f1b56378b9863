/**
 * `tokenvault/testing`: what a test suite needs to prove a store correct and to test against the
 * vault. Vitest is an optional peer dependency: the store suite registers its tests with it.
 */
export type { StoreHarness } from './store/suite.js'
export { storeContract } from './store/suite.js'
