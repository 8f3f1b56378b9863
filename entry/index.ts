/**
 * The package's main entry (`tokenvault`) and its composition root: the core's public face, with
 * `createService` wired to the default parts that live outside the core (the sandbox formula runner
 * of `adapters/sandbox`). Nothing in `src/` imports an adapter; this file is where they meet.
 */

import { lazyEgress, lazyRunner, type Pacer } from '../src/kernel/index.js'
import type { ServiceOptions } from '../src/service/index.js'
import { createCoreService, type Service, type TestService } from '../src/service/index.js'

export type { Paginated } from '../src/call/index.js'
export type { KeyProvider, MasterKey } from '../src/encryption/index.js'
export { localMasterKey } from '../src/encryption/index.js'
export type {
  AccessRule,
  Application,
  ApplicationType,
  Association,
  Clock,
  Condition,
  ConfigurationElement,
  DataKeyVersion,
  EgressClient,
  EgressLimits,
  EgressRequest,
  EgressResponse,
  ElementType,
  EmptyInput,
  FormulaRequest,
  FormulaRunner,
  FormulaStatus,
  FormulaType,
  FormulaUse,
  IdempotencyRecord,
  Json,
  JsonArray,
  JsonObject,
  LinkKey,
  LogEntry,
  ManualClock,
  OutboxAttempt,
  OutboxEntry,
  Pacer,
  Permission,
  Reactor,
  ReactorFormula,
  ReactResult,
  RequestParameterElement,
  RunFailureKind,
  RunOptions,
  RunOutcome,
  ServiceErrorCode,
  SessionState,
  StagedWrite,
  StoredApplication,
  StoredApplicationKey,
  StoredDocument,
  StoredDocumentChunk,
  StoredFormula,
  StoredProxy,
  StoredSession,
  StoredToken,
  StoredTokenIntent,
  StoredTransaction,
  StoredWebhook,
  Tenant,
  TenantKeys,
  Token,
  TokenLock,
  TokenTree,
  Transaction,
  TransactionState,
  Transform,
  ValidationIssues,
  WebhookStatus,
} from '../src/kernel/index.js'
export { EgressError, manualClock, ServiceError, systemClock } from '../src/kernel/index.js'
export type { StateSnapshot } from '../src/lifecycle/index.js'
export type { OfficialFormulaAdmin, OfficialFormulaOptions } from '../src/reactors/index.js'
export type {
  Actor,
  Admin,
  AdminCreateApplicationInput,
  AdminView,
  ApplicationWithKey,
  AuthorizeSessionInput,
  Client,
  ConvertTokenIntentInput,
  CountedPage,
  CreateApplicationInput,
  CreateReactorInput,
  CreateTenantInput,
  CreateTokenInput,
  CreateTokenIntentInput,
  DetokenizeInput,
  Fixture,
  FixtureTenant,
  FlatMetadataFilter,
  JournalEntry,
  JournalQuery,
  ListApplicationsQuery,
  ListChildrenQuery,
  ListPermissionsQuery,
  ListReactorFormulasQuery,
  ListReactorsQuery,
  ListTokensQuery,
  ListTokensV2Query,
  OfficialFormulaInput,
  OperationJournal,
  PatchReactorInput,
  ReactInput,
  ReactorFormulaInput,
  ReactorView,
  SearchTokensInput,
  SearchTokensV2Input,
  Service,
  ServiceDefaults,
  ServiceOptions,
  TenantView,
  TestAdmin,
  TestPowers,
  TestService,
  TokenizeInput,
  TokenView,
  TransactionView,
  Unchecked,
  UpdateApplicationInput,
  UpdateReactorInput,
  UpdateTokenInput,
  VaultEvent,
  ViewPage,
} from '../src/service/index.js'
export { unchecked } from '../src/service/index.js'
export type { CreatedSession } from '../src/sessions/index.js'
export type {
  Check,
  ChildKey,
  KeyOwner,
  Op,
  Page,
  Range,
  Store,
  StoreDump,
  StoreErrorCode,
  TokenHead,
  TokenTerm,
  WriteResult,
} from '../src/store/index.js'
export { isStoreError, StoreError } from '../src/store/index.js'

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
 * The default pacer of background work: the host's monotonic time and `setTimeout`, which live
 * here, outside the core, like every other part that touches the host.
 */
function hostPacer(): Pacer {
  return {
    now: () => performance.now(),
    pause: (ms) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
  }
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
  return createCoreService(options, { runner: sandboxByDefault, egress: egressByDefault, pacer: hostPacer })
}
