import { randomUUID } from 'node:crypto'
import type { OutboxAttempt, OutboxEntry } from '../kernel/index.js'
import { isoAfter, nextTurn } from '../kernel/index.js'
import { type AcceptedRun, acceptedOf } from '../reactors/index.js'
import type { DueKey, Op } from '../store/index.js'
import type { DispatcherDeps } from './deps.js'
import { pendingEntry } from './outbox.js'
import { OutboxWrites, unchanged } from './outbox-writes.js'
import { entryKey as key, ReadyEntries } from './ready.js'
import { sendEntry } from './send.js'

/** Attempts a delivery gets in all: the first and up to 10 retries. */
export const DELIVERY_ATTEMPTS = 11
/** Wait before the first retry; each further retry waits twice as long (10 s, 20 s, … 5120 s: about 2.8 h in all). */
export const FIRST_RETRY_MS = 10_000
/**
 * How long a claim lasts (ms): while one process attempts a delivery, no other sees it due; if the
 * process dies, the delivery is due again when the claim ends. Longer than an attempt may take.
 */
export const CLAIM_MS = 30_000
/** What a run of an accepted asynchronous react is claimed for beyond its own time limit (ms). */
export const REACT_CLAIM_MARGIN_MS = 5_000
/** How long an attempt may take, answer included (ms). */
export const ATTEMPT_TIMEOUT_MS = 10_000
/** How long a finished delivery (delivered or failed) is kept for tests and the console (ms). */
export const FINISHED_KEPT_MS = 24 * 60 * 60 * 1000
/** Deliveries one process attempts at once: of one tenant, and in all. */
export const IN_FLIGHT_PER_TENANT = 8
export const IN_FLIGHT = 64
/**
 * The share of the time the steps of deliveries take at most while calls come (`pacedTurn`): a
 * tenant's backlog (five webhooks on its creates) goes out at a quarter of the process's time at
 * the most while other tenants' calls run, at full speed when none does.
 */
export const DELIVERY_SHARE = 0.25
/** Due entries one pass reads per page, and at most in all (past tenants at their share). */
const PAGE = 256
const SCAN = 16 * PAGE

/** The wait before retry `n` (1 for the first retry): 10 s × 2^(n−1). */
export const retryDelayMs = (n: number): number => FIRST_RETRY_MS * 2 ** (n - 1)

/**
 * Delivers the outbox: each pass reads the pending entries due now (`listDueOutbox`), claims each
 * with a compare-and-set put (`due_at` moved to now + `CLAIM_MS`, a new `claim`), attempts it, and
 * records the attempt under the same guard: delivered, due again after the back-off, or failed after
 * `DELIVERY_ATTEMPTS`. So each delivery is attempted by one process at a time, at least once.
 * Nothing here reads the real time: passes run when the service asks (after a write that made
 * entries, on the sweep's ticker, `deliverDue()` in tests), at the clock's time.
 *
 * One tenant never holds up another: a pass skips the due entries of a tenant that has
 * `IN_FLIGHT_PER_TENANT` attempts running and reads on past them, and no pass awaits another
 * tenant's slow receiver before starting the next one's attempts. The entries a pass skips that way
 * are kept (`ReadyEntries`, bounded) and start as their tenant's attempts end, so a tenant's backlog
 * is read once per batch of deliveries, not once per delivery; a write of a tenant whose share is
 * running starts no pass (its entries wait for that tenant's next free slot).
 */
export class Dispatcher {
  private readonly running = new Map<string, Promise<void>>()
  private readonly perTenant = new Map<string, number>()
  private pass: Promise<number> | null = null
  private again = false
  /** Whether the last pass left due entries for want of a free slot: a finished attempt starts another pass. */
  private saturated = false
  private closed = false
  /**
   * Where the last pass stopped before the end of the due entries: the next one reads on from there
   * (then from the start), so a backlog longer than a pass reads (`SCAN`) of a tenant at its share
   * never hides the entries past it from every pass.
   */
  private resume: DueKey | undefined
  /** Due entries left for want of their tenant's slot, started as that tenant's attempts end. */
  private readonly ready = new ReadyEntries()
  /** The claims and results of this process's attempts, gathered into few store writes. */
  private readonly writes: OutboxWrites
  /** The last step's turn (`DispatcherDeps.turns`): the next step takes its turn after it. */
  private turns: Promise<void> = Promise.resolve()
  /** Steps asked for and not yet given their turn. */
  private waitingSteps = 0
  /** The run of turns the waiting steps share (made by `DispatcherDeps.turns` when none waited). */
  private turn: (() => Promise<void>) | undefined

  constructor(private readonly deps: DispatcherDeps) {
    this.writes = new OutboxWrites(deps.store)
  }

  /**
   * Starts a pass in the background (one at a time; asked again meanwhile, one more runs after it).
   * Asked after a write of `tenantId` while that tenant has its share of attempts running, it runs
   * none: the pass could start nothing of that tenant, and one of its attempts ending starts the next.
   */
  kick(tenantId?: string): void {
    if (this.closed) return
    if (tenantId !== undefined && (this.perTenant.get(tenantId) ?? 0) >= IN_FLIGHT_PER_TENANT) {
      this.saturated = true
      return
    }
    if (this.pass) {
      this.again = true
      return
    }
    this.pass = this.runPass().finally(() => {
      this.pass = null
      if (this.again) {
        this.again = false
        this.kick()
      }
    })
    this.pass.catch(() => {})
  }

  /**
   * Runs a pass now and waits for it and every attempt it started: answers how many deliveries it
   * attempted. What `service.admin.webhooks.deliverDue()` and the sweep call.
   */
  async deliverDue(): Promise<number> {
    while (this.pass) await this.pass.catch(() => 0)
    const started = await this.runPass()
    await this.idle()
    return started
  }

  /** Runs a pass now (after the one under way) and answers once it started its attempts: see `WebhookAdmin.startDue`. */
  async startDue(): Promise<number> {
    while (this.pass) await this.pass.catch(() => 0)
    return this.runPass()
  }

  /** Resolves when no pass and no attempt of this process is running. */
  async idle(): Promise<void> {
    while (this.pass || this.running.size) {
      await this.pass?.catch(() => 0)
      await Promise.all(this.running.values())
    }
  }

  /**
   * Stops taking new passes and starting runs: called before the formula runner closes, so an
   * attempt whose claim lands afterwards gives its react back instead of starting a run that no
   * runner would end.
   */
  stop(): void {
    this.closed = true
    this.ready.clear()
  }

  /** Stops (see `stop`) and waits for the attempts running (their results are recorded). */
  async close(): Promise<void> {
    this.stop()
    await this.idle()
  }

  private async runPass(): Promise<number> {
    const now = this.deps.clock.now().toISOString()
    let after = this.resume
    // Begun past the start: at the end of the due entries, read on from the start.
    let wrapped = after === undefined
    let started = 0
    for (let read = 0; read < SCAN; ) {
      const page = await this.deps.store.listDueOutbox({
        before: now,
        limit: PAGE,
        ...(after ? { after } : {}),
      })
      read += page.length
      for (const entry of page) {
        if (this.running.size >= IN_FLIGHT) return this.stopAt(after, started)
        const k = key(entry)
        after = dueKeyOf(entry)
        if (this.running.has(k)) continue
        if ((this.perTenant.get(entry.tenant_id) ?? 0) >= IN_FLIGHT_PER_TENANT) {
          if (!this.ready.keep(entry)) this.saturated = true
          continue
        }
        if (this.ready.has(k, entry.tenant_id)) continue
        this.start(entry)
        started++
      }
      if (page.length < PAGE) {
        if (wrapped) {
          this.resume = undefined
          return started
        }
        wrapped = true
        after = undefined
      }
      // A pass reads up to `SCAN` entries: it lets the requests waiting run between pages, rather
      // than holding the process for all of them at once.
      await nextTurn()
    }
    return this.stopAt(after, started)
  }

  /**
   * A pass stopped before the end of the due entries (every slot taken, or its read bound reached):
   * the next reads on from `after`, and a finished attempt must start it, or the entries past this
   * point wait for the next write, which may never come.
   */
  private stopAt(after: DueKey | undefined, started: number): number {
    this.resume = after
    this.saturated = true
    return started
  }

  private start(entry: OutboxEntry): void {
    const k = key(entry)
    this.perTenant.set(entry.tenant_id, (this.perTenant.get(entry.tenant_id) ?? 0) + 1)
    const done = this.attempt(entry)
      .catch(() => {})
      .finally(() => {
        this.running.delete(k)
        const left = (this.perTenant.get(entry.tenant_id) ?? 1) - 1
        if (left > 0) this.perTenant.set(entry.tenant_id, left)
        else this.perTenant.delete(entry.tenant_id)
        // The tenant's next entry a pass kept starts in this slot, without another pass.
        const next = this.closed ? undefined : this.ready.take(entry.tenant_id)
        if (next) this.start(next)
        // Due entries were left for want of a slot: this one is free now.
        else if (this.saturated) {
          this.saturated = false
          this.kick()
        }
      })
    this.running.set(k, done)
  }

  /**
   * A turn for one step of an attempt (`DispatcherDeps.turns`), after the steps that asked before
   * it. When none waits, the steps begin a new run of turns: the time no step waited (the
   * dispatcher idle, or its attempts waiting on their receivers) never counts as theirs, so a
   * delivery after it does not pause for it.
   */
  private step(): Promise<void> {
    const make = this.deps.turns
    if (!make) return Promise.resolve()
    if (this.waitingSteps === 0) this.turn = make()
    this.waitingSteps++
    const mine = this.turns.then(this.turn).finally(() => {
      this.waitingSteps--
    })
    this.turns = mine.catch(() => {})
    return mine
  }

  /** Claims `entry`, attempts it, records the outcome. A claim lost to another process is left to it. */
  private async attempt(entry: OutboxEntry): Promise<void> {
    await this.step()
    const { clock } = this.deps
    const claimedAt = clock.now().toISOString()
    const lease = entry.kind === 'react' ? acceptedOf(entry).timeoutMs + REACT_CLAIM_MARGIN_MS : CLAIM_MS
    // `Object.assign`, not a spread followed by a new key (slow in Node 20: see `pendingEntry`).
    const claimed: OutboxEntry = Object.assign({}, entry, {
      claim: randomUUID(),
      due_at: isoAfter(claimedAt, lease),
    })
    // Claims and results go out with the others asked meanwhile, one store write for many (`OutboxWrites`).
    if (!(await this.writes.write(unchanged(entry), [{ op: 'outbox.put', entry: claimed }]))) return
    if (claimed.kind === 'react' && this.closed) {
      // Closing: the runner is closed or closing. The react goes back as it was, due as before.
      await this.writes.write(unchanged(claimed), [{ op: 'outbox.put', entry }])
      return
    }
    const ops: Op[] = []
    await this.step()
    if (claimed.kind === 'react') ops.push(...(await this.ranReact(claimed)))
    else {
      const current = await deliverable(this.deps, claimed)
      const now = () => clock.now().toISOString()
      if (typeof current === 'string') ops.push({ op: 'outbox.put', entry: dropped(claimed, current, now()) })
      else {
        const outcome = await sendEntry(this.deps, current, ATTEMPT_TIMEOUT_MS)
        ops.push({ op: 'outbox.put', entry: recorded(current, outcome, now()) })
      }
    }
    // Under the claim: if it ran out and another process took the delivery, this result is dropped.
    await this.step()
    const done = await this.writes.write(unchanged(claimed), ops)
    // A react's callback (put in the same write) goes out at once, as a write's deliveries do.
    if (done && ops.length > 1) this.kick()
  }

  /**
   * Runs the accepted react of `claimed`: the entry finished with its result (and, with a
   * `callback_url`, the callback's delivery, due now), or due again after the back-off when the
   * runner asked for a retry.
   */
  private async ranReact(claimed: OutboxEntry): Promise<Op[]> {
    const at = this.deps.clock.now().toISOString()
    const last = claimed.attempts.length + 1 >= DELIVERY_ATTEMPTS
    const run: AcceptedRun = this.deps.runReact
      ? await this.deps.runReact(claimed, last).catch(() => ({ done: false, error: 'the run failed' }))
      : { done: false, error: 'no formula runner is configured' }
    const now = this.deps.clock.now().toISOString()
    if (!run.done)
      return [{ op: 'outbox.put', entry: recorded(claimed, { at, ok: false, error: run.error }, now) }]
    const finished: OutboxEntry = Object.assign(unclaimed(claimed), {
      state: 'delivered' as const,
      result: run.result,
      attempts: [...claimed.attempts, { at, ok: run.ok }],
      expires_at: isoAfter(now, FINISHED_KEPT_MS),
    })
    const ops: Op[] = [{ op: 'outbox.put', entry: finished }]
    // Its `reactor.completed` or `.failed` deliveries land with its result, or neither does.
    if (run.invoked && this.deps.runEvents) {
      const elapsedMs = Date.parse(now) - Date.parse(at)
      ops.push(...(await this.deps.runEvents(claimed, run, elapsedMs, now)))
    }
    if (run.callback) {
      const { url, body } = run.callback
      ops.push({
        op: 'outbox.put',
        entry: pendingEntry({ tenant_id: claimed.tenant_id, kind: 'callback', url, body }, now),
      })
    }
    return ops
  }
}

/**
 * `entry` without its claim and due time, its other keys in their order: a copy made key by key, as
 * `const { claim, due_at, ...rest } = entry` followed by a spread with new keys costs several times
 * more in Node 20 (see `pendingEntry`).
 */
function unclaimed(entry: OutboxEntry): Omit<OutboxEntry, 'claim' | 'due_at'> {
  const out: Partial<Record<keyof OutboxEntry, unknown>> = {}
  for (const key of Object.keys(entry) as (keyof OutboxEntry)[])
    if (key !== 'claim' && key !== 'due_at') out[key] = entry[key]
  return out as Omit<OutboxEntry, 'claim' | 'due_at'>
}

/** The entry after an attempt: delivered, failed for good, or due again after its back-off. */
export function recorded(entry: OutboxEntry, attempt: OutboxAttempt, now: string): OutboxEntry {
  const attempts = [...entry.attempts, attempt]
  if (attempt.ok || attempts.length >= DELIVERY_ATTEMPTS) {
    const state = attempt.ok ? ('delivered' as const) : ('failed' as const)
    return Object.assign(unclaimed(entry), { attempts, state, expires_at: isoAfter(now, FINISHED_KEPT_MS) })
  }
  const due_at = isoAfter(now, retryDelayMs(attempts.length))
  return Object.assign(unclaimed(entry), { attempts, state: 'pending' as const, due_at })
}

/**
 * A webhook's delivery as its webhook now stands: sent to the webhook's current `url`; not sent at
 * all (why, as a string) once the webhook is deleted, disabled or no longer subscribes to the
 * event. Other entries (callbacks) as they are.
 */
async function deliverable(deps: DispatcherDeps, entry: OutboxEntry): Promise<OutboxEntry | string> {
  if (entry.kind !== 'webhook' || entry.webhook_id === undefined) return entry
  const hook = await deps.store.getWebhook(entry.tenant_id, entry.webhook_id)
  if (!hook) return 'not sent: the webhook was deleted'
  if (hook.status !== 'enabled') return 'not sent: the webhook is disabled'
  if (entry.event_type !== undefined && !hook.events.includes(entry.event_type))
    return `not sent: the webhook no longer subscribes to ${entry.event_type}`
  return hook.url === entry.url ? entry : Object.assign({}, entry, { url: hook.url })
}

/** `entry` finished unsent: failed, with `reason` as its last attempt's error, kept as a finished one is. */
function dropped(entry: OutboxEntry, reason: string, now: string): OutboxEntry {
  const attempts = [...entry.attempts, { at: now, ok: false, error: reason }]
  return Object.assign(unclaimed(entry), {
    attempts,
    state: 'failed' as const,
    expires_at: isoAfter(now, FINISHED_KEPT_MS),
  })
}

/** An entry's place in the order of due entries (`listDueOutbox`). */
const dueKeyOf = (entry: OutboxEntry): DueKey => ({
  due_at: entry.due_at!,
  tenant_id: entry.tenant_id,
  id: entry.id,
})
