import { it } from 'vitest'

/** Whether this is a CI run (`CI` set): there a missing environment fails the tests that need it. */
export const inCi = (): boolean => Boolean(process.env['CI'])

/**
 * Inside a test that needs `what` (a database, a mountable disk, …) for part of its work: when it
 * is missing, throws in CI (a broken pipeline, not a reason to skip) and warns elsewhere.
 * Answers whether `what` is there, so the test can leave out that part outside CI.
 */
export function needs(available: boolean, what: string, fix: string): boolean {
  if (available) return true
  if (inCi()) throw new Error(`${what} is missing: CI must provide it (${fix})`)
  console.warn(`leaving out the part that needs ${what}: it is missing (${fix})`)
  return false
}

/**
 * `it` for a test that needs `what`. Without it the test is skipped with a note outside CI, and in
 * CI it runs and fails, naming what is missing and how to provide it.
 */
export function itNeeds(
  available: boolean,
  what: string,
  fix: string,
): (name: string, body: () => Promise<void> | void, timeout?: number) => void {
  if (available) return (name, body, timeout) => it(name, body, timeout)
  if (inCi()) {
    return (name, _body, timeout) =>
      it(
        name,
        () => {
          throw new Error(`${what} is missing: CI must provide it (${fix})`)
        },
        timeout,
      )
  }
  return (name, body, timeout) => {
    console.warn(`skipping "${name}": ${what} is missing (${fix})`)
    it.skip(name, body, timeout)
  }
}
