import type { OutboxEntry } from '../kernel/index.js'
import { notFound } from '../kernel/index.js'
import type { Store } from '../store/index.js'
import type { Dispatcher } from './dispatcher.js'
import type { WebhookSigner } from './signing.js'

/** One page of a tenant's deliveries read at a time. */
const PAGE = 256
/** Finished deliveries the sweep deletes per round. */
const PURGE_BATCH = 256

/**
 * The host's view and control of webhook deliveries and callbacks (`service.admin.webhooks`): for
 * the CLI's ticker, the test kit, `/_test/webhooks` and the console.
 */
export interface WebhookAdmin {
  /** The public key (SPKI PEM) deliveries are signed with: what receivers verify `BT-SIGNATURE` with. */
  readonly publicKey: string
  /**
   * Attempts every delivery due at the clock's time now (pending, its back-off over, no live claim)
   * and waits for those attempts: answers how many it attempted. The CLI runs it every second.
   */
  deliverDue(): Promise<number>
  /**
   * Starts the attempts of every delivery due now, as `deliverDue` does, but answers once they are
   * started, without waiting for them: what the CLI runs every second, so a receiver that does not
   * answer (each attempt up to its 10 s) holds up no later tick, and no other tenant's retries.
   * Answers how many it started.
   */
  startDue(): Promise<number>
  /**
   * A tenant's deliveries (webhook events and callbacks) in the order its writes made them: what
   * was sent (`body`), where, its state and each attempt's outcome. At most `limit` (default 100)
   * after `after` (an id).
   */
  deliveries(tenantId: string, query?: { after?: string; limit?: number }): Promise<OutboxEntry[]>
  /**
   * "Deliver now": makes every pending delivery of `tenantId` due at once, ignoring its back-off (no
   * need to move the clock), then runs `deliverDue`. Answers how many it attempted.
   */
  deliverNow(tenantId: string): Promise<number>
  /**
   * "Deliver again": puts a delivered or failed delivery back as pending, due now, its attempts kept
   * (to test a receiver's handling of duplicates), then runs `deliverDue`. 404 for an unknown id.
   */
  deliverAgain(tenantId: string, id: string): Promise<OutboxEntry>
  /** Deletes finished deliveries whose 24 hours are over (the sweep runs it); answers how many. */
  purgeFinished(): Promise<number>
}

/** The webhook admin over `store` (without write effects), the dispatcher and the signer. */
export function webhookAdmin(deps: {
  store: Store
  dispatcher: Dispatcher
  signer: WebhookSigner
  now: () => string
}): WebhookAdmin {
  const { store, dispatcher, now } = deps
  const put = async (old: OutboxEntry, next: OutboxEntry) =>
    (
      await store.write({
        checks: [{ check: 'outbox.unchanged', tenant_id: old.tenant_id, id: old.id, entry: old }],
        ops: [{ op: 'outbox.put', entry: next }],
      })
    ).ok
  return {
    get publicKey() {
      return deps.signer.publicKey
    },
    deliverDue: () => dispatcher.deliverDue(),
    startDue: () => dispatcher.startDue(),
    deliveries: (tenantId, query = {}) =>
      store.listOutbox(tenantId, {
        ...(query.after === undefined ? {} : { after: query.after }),
        limit: Math.min(1000, Math.max(0, query.limit ?? 100)),
      }),
    async deliverNow(tenantId) {
      const at = now()
      let after: string | undefined
      for (;;) {
        const page = await store.listOutbox(tenantId, { ...(after ? { after } : {}), limit: PAGE })
        for (const entry of page) {
          // A delivery under a live claim is being attempted: it is left to its process.
          if (entry.state !== 'pending' || entry.claim !== undefined || entry.due_at! <= at) continue
          await put(entry, { ...entry, due_at: at })
        }
        if (page.length < PAGE) break
        after = page[page.length - 1]!.id
      }
      return dispatcher.deliverDue()
    },
    async deliverAgain(tenantId, id) {
      const entry = await store.getOutbox(tenantId, id)
      if (!entry) throw notFound('delivery')
      if (entry.state !== 'pending') {
        const { expires_at: _gone, ...rest } = entry
        await put(entry, { ...rest, state: 'pending', due_at: now() })
      }
      await dispatcher.deliverDue()
      return (await store.getOutbox(tenantId, id)) ?? entry
    },
    async purgeFinished() {
      let purged = 0
      for (;;) {
        const keys = await store.listExpired({ kind: 'outbox', before: now(), limit: PURGE_BATCH })
        for (const k of keys) {
          const result = await store.write({
            ops: [{ op: 'outbox.delete', tenant_id: k.tenant_id, id: k.id }],
          })
          if (result.ok) purged++
        }
        if (keys.length < PURGE_BATCH) return purged
      }
    },
  }
}
