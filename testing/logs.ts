import type { LogVerification, LogView } from '../src/audit/index.js'
import type { LogViewQuery, TestService, ViewPage } from '../src/service/index.js'

/** The test vault's audit log: see `TestVault.logs`. */
export interface LogKit {
  /**
   * A page of the tenant's audit log, newest first, as `GET /logs` filters it (`entity_type`, with
   * it `entity_id`; `start_date`, `end_date`; `size` 1–100, 20 unless given; `start`: the `next` of
   * the page before). No `log:read` key needed.
   */
  list(query?: LogViewQuery): Promise<ViewPage<LogView>>
  /** Verifies the tenant's chain of entries: `{ ok, entries, lanes, broken? }`. */
  verify(): Promise<LogVerification>
}

/** The audit log kit of one tenant of a test-mode service. */
export function logKit(service: TestService, tenantId: string): LogKit {
  return {
    list: (query = {}) => service.admin.view.logs(tenantId, query),
    verify: () => service.admin.verifyLogs({ tenantId }),
  }
}
