import type { Clock, EgressClient, OutboxEntry, StoredWebhook } from '../kernel/index.js'
import { tooMany } from '../kernel/index.js'
import { type AcceptedRun, acceptedOf } from '../reactors/index.js'
import type { Op, Store, WriteBatch, WriteEffectContext, WriteEffectHook } from '../store/index.js'
import type { DispatcherDeps } from './deps.js'
import { Dispatcher } from './dispatcher.js'
import { type DerivedEvent, reactorEvents } from './events.js'
import { deliveriesOf, MAX_WEBHOOKS_PER_TENANT, pendingRefusal, takes, webhookEffect } from './outbox.js'
import { type WebhookSigner, webhookSigner } from './signing.js'

/** What one service holds of webhooks: the signer, the dispatcher, and the write effect that fills the outbox. */
export interface WebhookRuntime {
  signer: WebhookSigner
  dispatcher: Dispatcher
  /** Appends a write's outbox entries to it; once such a write is acknowledged, starts a delivery pass. */
  effect: WriteEffectHook
  /**
   * Writes the deliveries of events a call made without a write of its own (`invocationEvents`);
   * resolves once they are in the store, and starts a delivery pass. Not guarded by the tenant's
   * pending bound: the call was admitted before it acted (`admitCall`) and is never refused after,
   * so the tenant may pass its bound by the events of the calls admitted together. Its webhooks
   * known as for reads (`readEvents`): a tenant known to take none of them costs a map lookup and
   * no promise (undefined).
   */
  callEvents(context: WriteEffectContext, events: readonly DerivedEvent[]): Promise<void> | undefined
  /**
   * Refuses (429) a call about to invoke a reactor or a proxy when a webhook of the tenant takes one
   * of `types` and the tenant's pending deliveries are at its bound (`CallbackPort.invoking`); its
   * webhooks known as for reads (`readEvents`), its count read only when one takes them.
   */
  admitCall(tenantId: string, types: readonly string[], nowMs: number): Promise<void> | undefined
  /**
   * Writes the deliveries of a read's events (`token.read`), unsynced as a read's audit entry is
   * (`deferSync`), when a webhook of the tenant takes them. The tenant's webhooks are read at most
   * once per `READ_HOOKS_MS` of the service's clock for this (a webhook write of this process reads
   * them again at once), so a read of a tenant that takes none costs a map lookup.
   */
  readEvents(
    tenantId: string,
    type: DerivedEvent['type'],
    now: string,
    made: () => { context: WriteEffectContext; events: DerivedEvent[] },
  ): Promise<void> | undefined
}

/**
 * How long (ms of the service's clock) the webhooks of a tenant read to decide a read's events are
 * trusted: a webhook made or changed by another process takes `token.read` within it.
 */
export const READ_HOOKS_MS = 500

/** Tenants whose webhooks are kept for reads' events at once; past it, the oldest kept goes. */
export const READ_HOOKS_TENANTS = 10_000

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
    ...(deps.runReact ? { runReact: deps.runReact, runEvents: runEventsOf(deps.store) } : {}),
    ...(deps.turns ? { turns: deps.turns } : {}),
  })
  const derive = webhookEffect(deps.store, deps.maxPendingPerTenant)
  const readHooks = new HooksForReads(deps.store)
  /** Writes the deliveries of `events`, its webhooks read from `hooks`: within the pending bound when `bounded`. */
  const writeEvents = async (
    hooks: Pick<Store, 'listWebhooks'>,
    context: WriteEffectContext,
    events: readonly DerivedEvent[],
    deferSync: boolean,
    bounded = true,
  ) => {
    if (!events.length) return
    const { ops, checks } = await deliveriesOf(hooks, context, events, deps.maxPendingPerTenant)
    if (!ops.length) return
    const batch: WriteBatch = bounded && checks?.length ? { checks, ops } : { ops }
    if (deferSync) batch.deferSync = true
    const written = await deps.store.write(batch)
    if (!written.ok) throw pendingRefusal(written.failed, deps.maxPendingPerTenant)
    if (deps.deliverAfterWrites) dispatcher.kick(tenantOf(ops))
  }
  return {
    signer,
    dispatcher,
    callEvents(context, events) {
      const tenantId = events[0]?.tenantId
      if (tenantId === undefined) return undefined
      if (events.some((event) => event.tenantId !== tenantId))
        return writeEvents(deps.store, context, events, false, false)
      const nowMs = Date.parse(context.now)
      const kept = readHooks.kept(tenantId, nowMs)
      if (kept && !events.some((event) => takesType(kept, event.type))) return undefined
      return (async () => {
        const known = knownHooks(kept ?? (await readHooks.of(tenantId, nowMs)))
        // Unguarded: the call was admitted before it acted (`admitCall`), and is not refused after.
        await writeEvents(known, context, events, false, false)
      })()
    },
    admitCall(tenantId, types, nowMs) {
      const kept = readHooks.kept(tenantId, nowMs)
      if (kept && !types.some((type) => takesType(kept, type))) return undefined
      return (async () => {
        const hooks = kept ?? (await readHooks.of(tenantId, nowMs))
        if (!types.some((type) => takesType(hooks, type))) return
        const max = deps.maxPendingPerTenant
        if ((await deps.store.countRecords(tenantId, 'outbox.pending')) >= max) throw atBound(max)
      })()
    },
    readEvents(tenantId, type, now, made) {
      const nowMs = Date.parse(now)
      const kept = readHooks.kept(tenantId, nowMs)
      // The common case: the tenant's webhooks are known and none takes it; no promise is made.
      if (kept && !takesType(kept, type)) return undefined
      return (async () => {
        const hooks = kept ?? (await readHooks.of(tenantId, nowMs))
        if (!takesType(hooks, type)) return
        const { context, events } = made()
        await writeEvents(knownHooks(hooks), context, events, true)
      })()
    },
    effect: {
      derive: (context, batch) => {
        // A webhook changed here: reads' events read the webhooks again at once.
        if (batch.ops.some((op) => op.op === 'webhook.put' || op.op === 'webhook.delete')) readHooks.clear()
        return derive.derive(context, batch)
      },
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

/**
 * The deliveries of a finished asynchronous react's end: `reactor.completed` or `reactor.failed`,
 * as its caller did it (the actor of the accepted react). Written with its result, unguarded by the
 * tenant's pending bound: the react's own entry, which counted against it, leaves the pending
 * ones in the same write, and a tenant has at most `MAX_WEBHOOKS_PER_TENANT` webhooks.
 */
function runEventsOf(store: Store): NonNullable<DispatcherDeps['runEvents']> {
  return async (entry, run, elapsedMs, now) => {
    if (!run.invoked) return []
    const { principal } = acceptedOf(entry)
    const context: WriteEffectContext = {
      tenantId: entry.tenant_id,
      actorId: principal.id,
      actorType: principal.kind,
      requestId: null,
      operation: 'reactor.react_async',
      now,
    }
    const invocation = {
      tenantId: entry.tenant_id,
      reactor: run.invoked.reactor,
      request: { id: entry.id, invocation_type: 'async' as const },
    }
    const { failure } = run.invoked
    const end = run.ok
      ? { ok: true as const, elapsedMs }
      : { ok: false as const, error: failure ?? 'failed', elapsedMs }
    return (
      await deliveriesOf(store, context, reactorEvents(invocation, false, end), Number.POSITIVE_INFINITY)
    ).ops
  }
}

/**
 * Each tenant's webhooks as reads' events need them (`WebhookRuntime.readEvents`): read from the
 * store at most once per `READ_HOOKS_MS` of the service's clock, at most `READ_HOOKS_TENANTS`
 * tenants kept. A read of the store that began before a `clear` does not fill it.
 */
export class HooksForReads {
  private readonly held = new Map<string, { hooks: StoredWebhook[]; until: number }>()
  private generation = 0

  constructor(private readonly store: Pick<Store, 'listWebhooks'>) {}

  /** The tenant's webhooks when kept and still trusted at `nowMs`, else undefined. */
  kept(tenantId: string, nowMs: number): StoredWebhook[] | undefined {
    const kept = this.held.get(tenantId)
    return kept && kept.until > nowMs ? kept.hooks : undefined
  }

  async of(tenantId: string, nowMs: number): Promise<StoredWebhook[]> {
    const kept = this.kept(tenantId, nowMs)
    if (kept) return kept
    const began = this.generation
    const range = { offset: 0, limit: MAX_WEBHOOKS_PER_TENANT }
    const hooks = (await this.store.listWebhooks(tenantId, range)).items
    if (began !== this.generation) return hooks
    this.held.delete(tenantId)
    this.held.set(tenantId, { hooks, until: nowMs + READ_HOOKS_MS })
    if (this.held.size > READ_HOOKS_TENANTS) this.held.delete(this.held.keys().next().value!)
    return hooks
  }

  clear(): void {
    this.generation++
    this.held.clear()
  }
}

/** `hooks` as the store would list them: the webhooks a call's or a read's events go to, read once. */
const knownHooks = (hooks: StoredWebhook[]): Pick<Store, 'listWebhooks'> => ({
  listWebhooks: async () => ({ items: hooks, total: hooks.length }),
})

/** Whether an enabled webhook of `hooks` takes `type`. */
const takesType = (hooks: readonly StoredWebhook[], type: string) => takes(hooks, type).length > 0

/** The 429 of a call refused before it acts: its tenant's pending deliveries are at their bound. */
const atBound = (max: number) =>
  tooMany(
    `this tenant has ${max} webhook deliveries and callbacks pending, its bound: a webhook takes this call's events`,
    10,
  )
