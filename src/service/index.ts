// The public face of this folder: what other folders of src/ import (they import nothing else
// from it). Kept by hand: add a name when another folder needs it.

export type {
  AdminView,
  CountedPage,
  ReactorView,
  TenantView,
  TokenView,
  TransactionView,
  ViewPage,
} from './admin-view.js'
export { adminView, OPEN_READ, RUNS_SHOWN } from './admin-view.js'
export type { DeliveryView, LogViewQuery } from './admin-view-records.js'
export { deliveryView } from './admin-view-records.js'
export type { CallOptions } from './client.js'
export type { Fixture, FixtureDeps, FixtureTenant } from './fixtures.js'
export { loadFixture } from './fixtures.js'
export type { IdempotencyDeps, IdempotencyOutcome } from './idempotency.js'
export {
  DEFAULT_IDEMPOTENCY_RECORDS_PER_TENANT,
  IDEMPOTENCY_FULL_RETRY_SEC,
  IDEMPOTENCY_RETENTION_MS,
  idempotent,
  keepsAnswer,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  MAX_KEPT_ANSWER_BYTES,
  requireIdempotencyKey,
} from './idempotency.js'
export type {
  AdminCreateApplicationInput,
  AuthorizeSessionInput,
  ConvertTokenIntentInput,
  CreateApplicationInput,
  CreateReactorInput,
  CreateTenantInput,
  CreateTokenInput,
  CreateTokenIntentInput,
  DetokenizeInput,
  EmptyInput,
  FlatMetadataFilter,
  ListApplicationsQuery,
  ListChildrenQuery,
  ListPermissionsQuery,
  ListReactorFormulasQuery,
  ListReactorsQuery,
  ListTokensQuery,
  ListTokensV2Query,
  OfficialFormulaInput,
  PatchReactorInput,
  ReactInput,
  ReactorFormulaInput,
  SearchTokensInput,
  SearchTokensV2Input,
  TokenizeInput,
  UpdateApplicationInput,
  UpdateReactorInput,
  UpdateTokenInput,
} from './inputs.js'
export type { Actor, JournalEntry, JournalQuery, OperationJournal, VaultEvent } from './journal.js'
export {
  DEFAULT_JOURNAL_SIZE,
  DEFAULT_JOURNAL_SIZE_PER_TENANT,
  eventType,
  failureCode,
  failureOutcome,
  Journal,
  touchedIds,
} from './journal.js'
export type { ServiceOptions } from './options.js'
export type {
  Admin,
  ApplicationWithKey,
  Client,
  Service,
  ServiceDefaults,
  TestAdmin,
  TestPowers,
  TestService,
} from './service.js'
export { createCoreService } from './service.js'
export type { PermissionInfo } from './tenants.js'
export { permissionCatalogue, permissionOperations, tenantOperations } from './tenants.js'
export type { Unchecked } from './unchecked.js'
export { unchecked } from './unchecked.js'
