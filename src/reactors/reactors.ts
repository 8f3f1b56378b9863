import type { Ctx, Paginated } from '../call/index.js'
import type { ReactResult } from '../kernel/index.js'
import { type AsyncReactAccepted, reactAsync, reactResultOf } from './async-react.js'
import type {
  CreateReactorInput,
  ListReactorsQuery,
  PatchReactorInput,
  ReactInput,
  UpdateReactorInput,
} from './inputs.js'
import {
  createReactor,
  deleteReactor,
  getReactor,
  listReactors,
  patchReactor,
  updateReactor,
} from './reactor-changes.js'
import type { ShownReactor } from './reactor-records.js'
import { react } from './reactor-runs.js'

/**
 * Reactor create, list, get, update, patch, delete (`reactor:*`) and react (`token:use`) for one
 * caller. A reactor runs a formula's code (formula-based) or its own inline `code`. A formula-based
 * reactor's writes carry a `formula.present` check and put the reactor's formula-use record, so a
 * formula deleted concurrently can't leave a reactor pointing at nothing, and a used formula can't
 * be deleted (`formula.unused`); updates and deletes are guarded on the reactor read
 * (`reactor.unchanged`), so the use record they delete is the reactor's; a reactor naming an
 * application carries `application.present`. The records' rules are in `reactor-records.ts`, the
 * changes in `reactor-changes.ts`, the runs in `reactor-runs.ts`.
 */
export function reactorOperations(ctx: Ctx) {
  return {
    /**
     * Creates a reactor: from a formula visible to the tenant (`formula: { id }`; its configuration
     * must satisfy the formula's), or with its own `code` (compile-checked). `application: { id }`
     * names a public or private application of the tenant.
     */
    create: (input: CreateReactorInput): Promise<ShownReactor> => createReactor(ctx, input),

    /** Lists the tenant's reactors in creation order; `name` filters as for formulas, `id` by id. */
    list: (query: ListReactorsQuery = {}): Promise<Paginated<ShownReactor>> => listReactors(ctx, query),

    get: (id: string): Promise<ShownReactor> => getReactor(ctx, id),

    /**
     * Replaces the reactor (PUT): name, configuration and application; `formula` or `code` when
     * given (a reactor may move from one to the other), else it keeps the formula or code it has.
     */
    update: (id: string, input: UpdateReactorInput): Promise<ShownReactor> => updateReactor(ctx, id, input),

    /**
     * Changes the members given (JSON merge patch): `name`, `code` or `formula`, `application`
     * (`null` removes it), `configuration` (merged setting by setting; `null` removes a setting,
     * or, for the whole member, every setting).
     */
    patch: (id: string, input: PatchReactorInput): Promise<ShownReactor> => patchReactor(ctx, id, input),

    delete: (id: string): Promise<void> => deleteReactor(ctx, id),

    /**
     * Invokes the reactor: replaces `{{ <token id> }}` expressions in `args` by token data (under
     * `token:use` on each token; see `detokenizeArgs`); for a formula-based reactor, checks and
     * casts `args` against the formula's request parameters (inline code gets them as sent); runs
     * the code with `{ args, configuration }` through the service's runner (isolated, time-limited),
     * and creates the tokens its `tokenize` output asks for in one atomic write. Needs `token:use`
     * (as a permission or in an access rule) and, per created token, `token:create`. Does not enlist
     * in the caller's transaction. A `callback_url` belongs to `reactAsync` (HTTP: the same route
     * answers 202, as `asksAsyncReact` decides); `timeout_ms` applies to asynchronous reacts only.
     */
    react: (id: string, input: ReactInput = {}): Promise<ReactResult> => react(ctx, id, input),

    /**
     * Invokes the reactor asynchronously (node-sdk 5's `reactors.reactAsync`, `POST
     * /reactors/{id}/react-async`; also the deprecated `callback_url` on `/react`): checks everything
     * a react checks up front — the key, the reactor, `args` with their detokenization and casts,
     * and a `callback_url`'s origin on the egress allow-list — then records the react in the durable
     * outbox in one store write and answers its request id. The run happens after the answer (at
     * once; after a crash, when its claim ends, in any process on the store) within `timeout_ms`
     * (10000–210000, default 10000; the runner may cap it); its answer is kept 24 hours for
     * `result`, and with a `callback_url` it is POSTed there (the result, or `{ status, detail,
     * errors? }`), retried as webhook deliveries are. Counts toward the tenant's pending deliveries
     * (`maxPendingDeliveriesPerTenant`): past it, 429.
     */
    reactAsync: (id: string, input: ReactInput = {}): Promise<AsyncReactAccepted> =>
      reactAsync(ctx, id, input),

    /**
     * The result of asynchronous react `requestId` of reactor `id` (node-sdk 5's
     * `reactors.results.get`): what `react` would have answered, or its error thrown. 404 for an
     * unknown request id (or after its 24 hours); 409 while it has not finished running.
     */
    result: (id: string, requestId: string): Promise<ReactResult> => reactResultOf(ctx, id, requestId),
  }
}
