/**
 * `tokenvault/testing/equivalence`: the equivalence harness, `storeEquivalence(harness)`, which runs
 * random operation sequences against a store and the reference model. It needs vitest and fast-check
 * (optional peer dependencies: `npm i -D vitest fast-check`).
 */

export type { EquivalenceHarness } from './store/equivalence.js'
export { storeEquivalence } from './store/equivalence.js'
