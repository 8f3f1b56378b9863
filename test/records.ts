/** The store-test records, from the published suite (no test-runner import: crash-test children load it). */
export { LATER, NOW, T, token, tx, U } from '../testing/store/records.js'
