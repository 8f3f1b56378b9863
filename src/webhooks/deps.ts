import type { Clock, EgressClient, OutboxEntry } from '../kernel/index.js'
import type { AcceptedRun } from '../reactors/index.js'
import type { Op, Store } from '../store/index.js'
import type { WebhookSigner } from './signing.js'

/** What the dispatcher needs: the store (no write effects), clock, egress, allow-list and signer. */
export interface DispatcherDeps {
  store: Store
  clock: Clock
  egress: EgressClient
  origins: () => readonly string[]
  signer: WebhookSigner
  /**
   * Runs an accepted asynchronous react (`kind: 'react'` entries) as its caller; `last` when no
   * attempt follows (a busy runner then answers an error instead of asking for a retry).
   */
  runReact?: (entry: OutboxEntry, last: boolean) => Promise<AcceptedRun>
  /**
   * The deliveries of a finished asynchronous react's `reactor.completed` or `reactor.failed`
   * (`elapsedMs` from its claim to its end), written with its result.
   */
  runEvents?: (
    entry: OutboxEntry,
    run: Extract<AcceptedRun, { done: true }>,
    elapsedMs: number,
    now: string,
  ) => Promise<Op[]>
  /**
   * Makes what each attempt awaits before each of its steps on this thread (its claim, its request,
   * its result), one step of one attempt at a time: the service's background turn, kept to a share
   * of the time while calls come (`pacedTurn`), so one tenant's backlog of deliveries never holds
   * another tenant's calls. A new one is made whenever no step waits (see `Dispatcher.step`).
   * Without it (tests of the dispatcher alone) steps run at once.
   */
  turns?: () => () => Promise<void>
}
