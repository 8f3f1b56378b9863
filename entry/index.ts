/**
 * The package's main entry (`tokenvault`) and its composition root: the core's public face, with
 * `createService` wired to the default parts that live outside the core (the sandbox formula runner
 * of `adapters/sandbox`). Nothing in `src/` imports an adapter; this file is where they meet.
 */

import { lazyEgress } from '../src/kernel/egress.js'
import { lazyRunner } from '../src/kernel/runner.js'
import type { ServiceOptions } from '../src/service/options.js'
import { createCoreService, type Service, type TestService } from '../src/service/service.js'

export type { Paginated } from '../src/call/index.js'
export type { KeyProvider, MasterKey } from '../src/encryption/keyring.js'
export { localMasterKey } from '../src/encryption/keyring.js'
export type { Clock, ManualClock } from '../src/kernel/clock.js'
export { manualClock, systemClock } from '../src/kernel/clock.js'
export type { EgressClient, EgressLimits, EgressRequest, EgressResponse } from '../src/kernel/egress.js'
export { EgressError } from '../src/kernel/egress.js'
export type { ServiceErrorCode, ValidationIssues } from '../src/kernel/errors.js'
export { ServiceError } from '../src/kernel/errors.js'
export type {
  FormulaRequest,
  FormulaRunner,
  RunFailureKind,
  RunOptions,
  RunOutcome,
} from '../src/kernel/runner.js'
export type * from '../src/kernel/types.js'
export type { StateSnapshot } from '../src/lifecycle/state-transfer.js'
export type { OfficialFormulaAdmin, OfficialFormulaOptions } from '../src/reactors/formulas.js'
export type {
  AdminView,
  CountedPage,
  ReactorView,
  TenantView,
  TokenView,
  TransactionView,
  ViewPage,
} from '../src/service/admin-view.js'
export type { Fixture, FixtureTenant } from '../src/service/fixtures.js'
export type * from '../src/service/inputs.js'
export type {
  Actor,
  JournalEntry,
  JournalQuery,
  OperationJournal,
  VaultEvent,
} from '../src/service/journal.js'
export type { ServiceOptions } from '../src/service/options.js'
export type {
  Admin,
  ApplicationWithKey,
  Client,
  Service,
  ServiceDefaults,
  TestAdmin,
  TestPowers,
  TestService,
} from '../src/service/service.js'
export type { Unchecked } from '../src/service/unchecked.js'
export { unchecked } from '../src/service/unchecked.js'
export type { CreatedSession } from '../src/sessions/sessions.js'
export type {
  ChildKey,
  KeyOwner,
  Page,
  Range,
  Store,
  StoreDump,
  TokenHead,
  TokenTerm,
  WriteResult,
} from '../src/store/contract.js'
export type { StoreErrorCode } from '../src/store/error.js'
export { isStoreError, StoreError } from '../src/store/error.js'
export type { Check, Op } from '../src/store/index.js'

/**
 * The default formula runner, `sandboxRunner()` of `tokenvault/adapters/sandbox`, imported on first
 * use: a service that never creates or runs a formula never loads `node:worker_threads` or the
 * WebAssembly engine (`runner: null` never loads it).
 */
function sandboxByDefault() {
  return lazyRunner(async () => (await import('../adapters/sandbox/index.js')).sandboxRunner())
}

/**
 * The default egress client, `egressFetch` of `adapters/egress`, imported on first use: a service
 * that never sends a request never loads `node:http` (nothing goes out without `reactorEgress`).
 */
function egressByDefault() {
  return lazyEgress(async () => (await import('../adapters/egress/index.js')).egressFetch)
}

/**
 * Creates the service: every domain rule, over `options.store`, with time from `options.clock`. The
 * formula runner is `options.runner`, else the sandbox (`sandboxRunner()`, loaded on first use);
 * `null` turns formulas off. Requests go out through `options.egressClient`, else the node client of
 * `adapters/egress` (loaded on first use). With `testMode: true` its admin also has the test powers
 * (`TestPowers`: the whole state, token data in the clear); without it, it has none.
 */
export function createService(options: ServiceOptions & { testMode: true }): TestService
export function createService(options: ServiceOptions): Service
export function createService(options: ServiceOptions): Service {
  return createCoreService(options, { runner: sandboxByDefault, egress: egressByDefault })
}
