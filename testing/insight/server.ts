import type { Store } from '../../src/store/index.js'
import { vaultInsight } from './insight.js'

/**
 * The insight of a served vault (`tokenvault serve --test-mode`): the store to give the service
 * (every write recorded), the observer (`ServiceOptions.observe`), and the control plane's view
 * (`testControlHandler`'s `insight`: `/_test/leaks`, `/_test/exposure`, `/_test/used-access`).
 * `masterKey` is the service's: the leak index opens what it seals. Canaries are not made here.
 */
export function serverInsight(store: Store, masterKey: Uint8Array) {
  const insight = vaultInsight(store, masterKey, null)
  return {
    store: insight.store,
    observe: insight.accounting,
    /** Takes in what the store held before the server started. */
    load: () => insight.load(),
    // Over HTTP, fields are snake_case as everywhere in the API.
    control: {
      find: (value: unknown) =>
        insight.leaks.find(value).map((f) => ({
          token_id: f.tokenId,
          canary: f.canary,
          encoding: f.encoding,
          path: f.path,
          offset: f.offset,
        })),
      exposure: () => {
        const e = insight.exposure()
        return {
          total: e.total,
          by_application: e.byApplication,
          by_token: e.byToken,
          by_operation: e.byOperation,
          rows: e.rows,
        }
      },
      usedAccess: () => insight.usedAccess(),
      clear: () => insight.accounting.clear(),
    },
  }
}
