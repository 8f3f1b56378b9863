import { nanoid } from 'nanoid'
import { invalid, ServiceError } from '../../src/kernel/index.js'
import type { JournalEntry, TestService } from '../../src/service/index.js'
import type { FaultRegistry } from './faults.js'
import type { RequestLog, RequestLogEntry, RequestLogQuery } from './request-log.js'

/** A request log entry as `GET /_test/requests` answers it: names beside ids, its journal entries. */
export interface RequestView extends RequestLogEntry {
  tenant_name: string | null
  /** The application's name (a session has none: null). */
  actor_name: string | null
  journal_entries: JournalEntry[]
}

/** How many applications of one tenant are looked up for names. */
const NAMED_APPLICATIONS = 100

/** Names of tenants and applications (of `tenantIds`), read once per answer from the admin view. */
export async function nameBook(service: TestService, tenantIds: Iterable<string>) {
  const view = service.admin.view
  const names = new Map<string, string>()
  for (const tenant of await view.tenants()) names.set(tenant.id, tenant.name)
  for (const tenantId of new Set(tenantIds)) {
    if (!names.has(tenantId)) continue
    const page = await view.applications(tenantId, { limit: NAMED_APPLICATIONS })
    for (const app of page.data) names.set(app.id, app.name)
  }
  return (id: string | null) => (id === null ? null : (names.get(id) ?? null))
}

/** `entries` with names beside their ids and their journal entries (those still kept). */
export async function requestViews(service: TestService, entries: RequestLogEntry[]): Promise<RequestView[]> {
  const tenants = entries.flatMap((e) => (e.tenant_id === null ? [] : [e.tenant_id]))
  const name = await nameBook(service, tenants)
  const wanted = new Set(entries.flatMap((e) => e.journal))
  const journal = new Map<number, JournalEntry>()
  if (wanted.size) for (const j of service.journal.query()) if (wanted.has(j.seq)) journal.set(j.seq, j)
  return entries.map((e) => ({
    ...e,
    tenant_name: name(e.tenant_id),
    actor_name: name(e.actor_id),
    journal_entries: e.journal.flatMap((seq) => journal.get(seq) ?? []),
  }))
}

/** The filters of `GET /_test/requests` from its query: `after`, `tenant`, `failed`, `mark`, `limit`. */
export function requestQuery(q: URLSearchParams): RequestLogQuery {
  const out: RequestLogQuery = {}
  const refuse = (name: string, what: string): never => {
    throw invalid(name, what)
  }
  for (const name of ['after', 'limit'] as const) {
    const value = q.get(name)
    if (value === null) continue
    if (!/^\d{1,9}$/.test(value)) refuse(name, 'a whole number')
    out[name] = Number(value)
  }
  const failed = q.get('failed')
  if (failed !== null) {
    if (failed !== 'true' && failed !== 'false') refuse('failed', 'true or false')
    out.failed = failed === 'true'
  }
  const tenant = q.get('tenant')
  if (tenant !== null) out.tenant = tenant
  const mark = q.get('mark')
  if (mark !== null) out.mark = mark
  return out
}

/** A mark's name from `POST /_test/mark` `{ "name": "..." }`: 1 to 200 characters. */
export function markName(body: unknown): string {
  const name = (body as { name?: unknown } | null)?.name
  if (typeof name !== 'string' || name.length < 1 || name.length > 200)
    throw new ServiceError('validation_failed', 'give { "name": a string of 1 to 200 characters }', {
      issues: { name: ['a string of 1 to 200 characters'] },
    })
  return name
}

/**
 * `registry` with each injected fault that answers recorded in `log` (kind `fault`, the fault and
 * its problem): what never reaches the handler is in the request log too. Delays alone are not
 * recorded here: the request goes on to the handler, which records it.
 */
export function loggedFaults(registry: FaultRegistry, log: RequestLog): FaultRegistry {
  return {
    add: (input) => registry.add(input),
    list: () => registry.list(),
    clear: () => registry.clear(),
    take: (method, path) => {
      const fault = registry.take(method, path)
      if (fault === undefined || fault.status === null) return fault
      const problemBody = JSON.stringify({
        status: fault.status,
        detail: `An injected fault (POST /_test/faults, id ${fault.id}).`,
      })
      log.finish({
        request_id: `fault_${nanoid(12)}`,
        kind: 'fault',
        method,
        path,
        search: '',
        status: fault.status,
        ms: fault.delay_ms,
        problemBody,
        fault: { id: fault.id, method: fault.method, path: fault.path, status: fault.status },
      })
      return fault
    },
    get size() {
      return registry.size
    },
  }
}
