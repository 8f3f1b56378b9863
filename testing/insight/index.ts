// The face of the test insight (leak checks, exposure, used access, forks): what testing/index.ts
// and testing/vault.ts take from this folder.

export type { Exposure, ExposureRow } from './accounting.js'
export type { LeakEncoding } from './encodings.js'
export type { LeakFinding } from './leak-check.js'
export { LeakError } from './leak-check.js'
export type { Canary, Leaks, LeakWatch, WatchOptions } from './leaks.js'
export type { ExposureBudget, VaultMatchers } from './matchers.js'
export { vaultMatchers } from './matchers.js'
export type { CallerAccess, RuleUse, UsedAccess } from './used-access.js'
