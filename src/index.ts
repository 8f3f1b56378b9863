export type {
  AdminView,
  CountedPage,
  ReactorView,
  TenantView,
  TokenView,
  TransactionView,
  ViewPage,
} from './admin-view.js'
export type { Clock, ManualClock } from './clock.js'
export { manualClock, systemClock } from './clock.js'
export type { ServiceOptions } from './context.js'
export type { KeyProvider, MasterKey } from './encryption/keyring.js'
export { localMasterKey } from './encryption/keyring.js'
export type { ServiceErrorCode, ValidationIssues } from './errors.js'
export { ServiceError } from './errors.js'
export type { Fixture, FixtureTenant } from './fixtures.js'
export type { OfficialFormulaAdmin, OfficialFormulaOptions } from './formulas.js'
export type * from './inputs.js'
export type { Actor, JournalEntry, JournalQuery, OperationJournal, VaultEvent } from './journal.js'
export type { Paginated } from './pagination.js'
export type { FormulaRequest, FormulaRunner, RunFailureKind, RunOptions, RunOutcome } from './runner.js'
export type { Admin, ApplicationWithKey, Client, Service } from './service.js'
export { createService } from './service.js'
export type { CreatedSession } from './sessions.js'
export type { StateSnapshot } from './state-transfer.js'
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
} from './store/contract.js'
export type { StoreErrorCode } from './store/error.js'
export { isStoreError, StoreError } from './store/error.js'
export type * from './types.js'
export type { Unchecked } from './unchecked.js'
export { unchecked } from './unchecked.js'
