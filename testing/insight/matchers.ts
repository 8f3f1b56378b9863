import type { Exposure } from './accounting.js'
import { describeFindings, isMessage, type LeakFinding, messageValue } from './leak-check.js'

/** What `toContainVaultPlaintext` needs of a vault: its leak check. */
interface HasLeaks {
  leaks: { find(value: unknown): LeakFinding[] }
}

/** What `toExposeAtMost` needs of a vault: its exposure table. */
interface HasExposure {
  exposure(): Exposure
}

/**
 * An exposure budget: application name (or id) → the most plaintexts it may have taken out of the
 * vault in the test so far. `'*'` bounds every application not named.
 */
export type ExposureBudget = Record<string, number>

interface MatcherResult {
  pass: boolean
  message: () => string
}

function containResult(findings: LeakFinding[]): MatcherResult {
  return {
    pass: findings.length > 0,
    message: () =>
      findings.length > 0
        ? `expected the value not to contain vault plaintext, but ${describeFindings(findings)}`
        : 'expected the value to contain vault plaintext, but none was found',
  }
}

/** The applications over their budget, each with what it took and what it was allowed. */
export function overBudget(exposure: Exposure, budget: ExposureBudget): string[] {
  const over: string[] = []
  const byId = new Map<string, number>()
  const names = new Map<string, string>()
  for (const row of exposure.rows) {
    byId.set(row.principal_id, (byId.get(row.principal_id) ?? 0) + row.count)
    names.set(row.principal_id, row.application)
  }
  for (const [id, count] of byId) {
    const name = names.get(id)!
    const allowed = budget[name] ?? budget[id] ?? budget['*']
    if (allowed !== undefined && count > allowed) {
      over.push(
        `${name} (${id}) took ${count} plaintext${count === 1 ? '' : 's'} out, at most ${allowed} allowed`,
      )
    }
  }
  return over
}

/**
 * Matchers for vitest and Jest (`expect.extend(vaultMatchers)`), needing neither:
 * `expect(logs).not.toContainVaultPlaintext(vault)` and `expect(vault).toExposeAtMost({ 'checkout-api': 2 })`.
 * A `Response` or `Request` given to `toContainVaultPlaintext` is read: then `await` the assertion.
 */
export const vaultMatchers = {
  toContainVaultPlaintext(received: unknown, vault: HasLeaks): MatcherResult | Promise<MatcherResult> {
    if (isMessage(received)) return messageValue(received).then((v) => containResult(vault.leaks.find(v)))
    return containResult(vault.leaks.find(received))
  },
  toExposeAtMost(received: HasExposure, budget: ExposureBudget): MatcherResult {
    const exposure = received.exposure()
    const over = overBudget(exposure, budget)
    return {
      pass: over.length === 0,
      message: () =>
        over.length
          ? `expected the exposure to stay within its budget:\n  ${over.join('\n  ')}`
          : `expected the exposure to exceed its budget, but it stayed within it (${exposure.total} in all)`,
    }
  },
}

/**
 * The matchers' types, for a TypeScript project to add to its runner's:
 * `declare module 'vitest' { interface Assertion<T = any> extends VaultMatchers<T> {} }` (vitest) or
 * `declare global { namespace jest { interface Matchers<R> extends VaultMatchers<R> {} } }` (Jest).
 */
export interface VaultMatchers<R = unknown> {
  /** Passes when the value holds a plaintext of `vault` (use with `.not`). */
  toContainVaultPlaintext(vault: HasLeaks): R
  /** Passes when no application took more plaintexts out of the vault than `budget` allows it. */
  toExposeAtMost(budget: ExposureBudget): R
}
