import { BasisTheory as BasisTheoryJs } from '@basis-theory/basis-theory-js4'
import { BasisTheoryClient } from '@basis-theory/node-sdk'
import { intercept } from '../../entry/intercept.js'
import type { FormulaRunner } from '../../src/kernel/runner.js'
import type { CurrentSdkVault } from '../http/current-sdk-vault.js'

/** The host the SDKs call when no base URL is given. */
const PRODUCTION = 'https://api.basistheory.com'

/**
 * `startCurrentSdkVault` of test/http/current-sdk-vault.ts with every call going through
 * `tokenvault/intercept` instead of the socket: the SDK clients are built as production code builds
 * them — `new BasisTheoryClient({ apiKey })`, `new BasisTheory().init(key)`, no `baseUrl` or
 * `apiBaseUrl` — and `url` is Basis Theory's own host, so raw `fetch` calls go there too.
 */
export function intercepted(
  start: (runner: FormulaRunner) => Promise<CurrentSdkVault>,
): (runner: FormulaRunner) => Promise<CurrentSdkVault> {
  return async (runner) => {
    const vault = await start(runner)
    const interception = intercept(vault.service)
    return {
      ...vault,
      url: PRODUCTION,
      node: (apiKey) => new BasisTheoryClient({ apiKey }),
      js: (apiKey) => new BasisTheoryJs().init(apiKey),
      async close() {
        interception.close()
        await vault.close()
      },
    }
  }
}
