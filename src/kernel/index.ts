// The public face of this folder: what other folders of src/ import (they import nothing else
// from it). Kept by hand: add a name when another folder needs it.

export type {
  AccessDecision,
  AccessTrace,
  CallRecorder,
  RuleConsidered,
  RuleVerdict,
} from './access-trace.js'
export {
  BudgetExceeded,
  countExpression,
  depthOf,
  ExpressionBudget,
  expressionBudget,
  jsonSize,
  MAX_DETOKENIZED_CHARS,
  MAX_EXPRESSION_WORK,
  MAX_EXPRESSIONS,
  MAX_INPUT_DEPTH,
} from './budget.js'
export { BySize } from './by-size.js'
export type { StoredClientKey } from './client-key.js'
export type { Clock, ManualClock } from './clock.js'
export { isoAfter, manualClock, shiftedClock, systemClock } from './clock.js'
export { parseDateTime } from './date-time.js'
export type { EgressClient, EgressLimits, EgressRequest, EgressResponse } from './egress.js'
export { EGRESS_MAX_BODY_BYTES, EgressError, lazyEgress, TenantGate } from './egress.js'
export type { ServiceErrorCode, ValidationIssues } from './errors.js'
export {
  assertNever,
  conflict,
  forbidden,
  invalid,
  notFound,
  ServiceError,
  STATUS_BY_CODE,
  statusOfError,
  tooMany,
} from './errors.js'
export { newApiKey, newId, newNonce, newOrderedId, sha256 } from './ids.js'
export { jsonShape, MAX_JSON_VALUES, mayEscapeInJson, utf8NeedsJsonEscape } from './json-text.js'
export type { AccessUse, Observed, ObservedCall, Observer } from './observe.js'
export { noteRevealed, noteUse } from './observe.js'
export type { Pacer } from './pacer.js'
export { pacedTurn } from './pacer.js'
export type { FormulaRequest, FormulaRunner, RunFailureKind, RunOptions, RunOutcome } from './runner.js'
export { lazyRunner, withEgress } from './runner.js'
export {
  containerPath,
  emptyBody,
  FORBIDDEN_KEYS,
  hasControlCharacter,
  hasNoForbiddenKeys,
  isJson,
  isoDateTime,
  json,
  mapKey,
  pagination,
  sealedJson,
  stringList,
  withoutForbiddenKeys,
} from './schemas.js'
export { TenantLru } from './tenant-lru.js'
export type { TokenFields } from './token-record.js'
export { tokenHead, withTokenFields } from './token-record.js'
export { backgroundTurn, CallsInFlight, lightTurn, nextTurn } from './turn.js'
export type {
  AccessRule,
  Application,
  ApplicationType,
  Association,
  Condition,
  ConfigurationElement,
  DataKeyVersion,
  ElementType,
  EmptyInput,
  FormulaStatus,
  FormulaType,
  FormulaUse,
  IdempotencyRecord,
  Json,
  JsonArray,
  JsonObject,
  LinkKey,
  LogEntry,
  OutboxAttempt,
  OutboxEntry,
  Permission,
  Reactor,
  ReactorFormula,
  ReactResult,
  RequestParameterElement,
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
  WebhookStatus,
} from './types.js'
export type { AnySchema } from './validate.js'
export { badText, parse, refuseBadText, toIssues } from './validate.js'
