import { deliveryView, type TestService } from '../../src/service/index.js'
import { decodePart, logViewQuery, whole } from './console-query.js'
import { verifiedLog } from './log-routes.js'

/** A console answer: status and JSON body. */
type RecordAnswer = { status: number; body: unknown }

const ROUTE =
  /^tenants\/([^/]+)\/(logs|logs\/verify|deliveries|deliveries\/deliver|deliveries\/([^/]+)\/redeliver)$/

/**
 * The console's routes over what a tenant's calls left behind, or null for any other path:
 * - `GET api/tenants/{id}/logs?entity_type=&entity_id=&start_date=&end_date=&start=&size=` →
 *   `{ data, next? }`: its audit log, newest first (`AdminView.logs`);
 * - `GET api/tenants/{id}/logs/verify` → `LogVerification`: the chain checked, the first broken link;
 * - `GET api/tenants/{id}/deliveries?after=&size=` → `{ data, next? }`: its deliveries, oldest first,
 *   a callback's or react's body withheld (`AdminView.deliveries`);
 * - `POST api/tenants/{id}/deliveries/deliver` → `{ attempted }`: deliver now, past the back-off;
 * - `POST api/tenants/{id}/deliveries/{delivery}/redeliver` → the delivery, sent once more.
 */
export async function recordsApi(
  service: TestService,
  method: string,
  path: string,
  q: URLSearchParams,
): Promise<RecordAnswer | null> {
  const route = ROUTE.exec(path)
  if (!route) return null
  const tenant = decodePart(route[1]!)
  const part = route[3] === undefined ? route[2]! : 'redeliver'
  const view = service.admin.view
  const read = method === 'GET'
  if (read && part === 'logs') return { status: 200, body: await view.logs(tenant, logViewQuery(q)) }
  if (read && part === 'logs/verify') return { status: 200, body: await verifiedLog(service, tenant) }
  if (read && part === 'deliveries') {
    const after = q.get('after')
    const size = whole(q, 'size')
    const query = { ...(after === null ? {} : { after }), ...(size === undefined ? {} : { size }) }
    return { status: 200, body: await view.deliveries(tenant, query) }
  }
  if (method === 'POST' && part === 'deliveries/deliver') {
    await view.deliveries(tenant, { size: 1 }) // 404 for an unknown tenant
    return { status: 200, body: { attempted: await service.admin.webhooks.deliverNow(tenant) } }
  }
  if (method === 'POST' && part === 'redeliver') {
    const delivery = await service.admin.webhooks.deliverAgain(tenant, decodePart(route[3]!))
    return { status: 200, body: deliveryView(delivery) }
  }
  return null
}
