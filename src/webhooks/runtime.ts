import type { Clock, EgressClient, OutboxEntry } from '../kernel/index.js'
import type { AcceptedRun } from '../reactors/index.js'
import type { Op, Store, WriteEffectHook } from '../store/index.js'
import { Dispatcher } from './dispatcher.js'
import { webhookEffect } from './outbox.js'
import { type WebhookSigner, webhookSigner } from './signing.js'

/** What one service holds of webhooks: the signer, the dispatcher, and the write effect that fills the outbox. */
export interface WebhookRuntime {
  signer: WebhookSigner
  dispatcher: Dispatcher
  /** Appends a write's outbox entries to it; once such a write is acknowledged, starts a delivery pass. */
  effect: WriteEffectHook
}

/** Builds a service's webhook runtime over `store` (the sealed store, without effects). */
export function webhookRuntime(deps: {
  store: Store
  clock: Clock
  egress: EgressClient
  origins: () => readonly string[]
  signingKey: string | undefined
  maxPendingPerTenant: number
  /** Whether a write that made outbox entries starts a delivery pass at once (else only `deliverDue`). */
  deliverAfterWrites: boolean
  /** Runs an accepted asynchronous react as its caller (see `DispatcherDeps.runReact`). */
  runReact?: (entry: OutboxEntry, last: boolean) => Promise<AcceptedRun>
  /** Makes what each attempt's steps await (see `DispatcherDeps.turns`). */
  turns?: () => () => Promise<void>
}): WebhookRuntime {
  const signer = webhookSigner(deps.signingKey)
  const dispatcher = new Dispatcher({
    store: deps.store,
    clock: deps.clock,
    egress: deps.egress,
    origins: deps.origins,
    signer,
    ...(deps.runReact ? { runReact: deps.runReact } : {}),
    ...(deps.turns ? { turns: deps.turns } : {}),
  })
  const derive = webhookEffect(deps.store, deps.maxPendingPerTenant)
  return {
    signer,
    dispatcher,
    effect: {
      derive: derive.derive,
      // A write whose deliveries would pass the tenant's pending bound: 429, nothing lands.
      ...(derive.refused ? { refused: derive.refused } : {}),
      // The first attempt follows the write at once (no timer: the pass runs on the event loop now).
      settled: (_context, ops, outcome) => {
        if (outcome === 'ok' && ops.length && deps.deliverAfterWrites) dispatcher.kick(tenantOf(ops))
      },
    },
  }
}

/** The one tenant whose outbox entries `ops` put, or undefined (then a pass runs for every tenant). */
function tenantOf(ops: readonly Op[]): string | undefined {
  let tenant: string | undefined
  for (const op of ops) {
    if (op.op !== 'outbox.put' || (tenant !== undefined && op.entry.tenant_id !== tenant)) return undefined
    tenant = op.entry.tenant_id
  }
  return tenant
}
