// The public face of this folder: what other folders of src/ import (they import nothing else
// from it). Kept by hand: add a name when another folder needs it.
export type {
  ChildKey,
  CountedKind,
  DueKey,
  ExpiringKind,
  KeyOwner,
  LogQuery,
  Page,
  Range,
  ReactorQuery,
  RecordKey,
  Store,
  StoreDump,
  StoreReads,
  TokenHead,
  TokenTerm,
  WriteResult,
} from './contract.js'
export { stagedCharsHeld } from './contract.js'
export type { StoreMethod } from './delegate.js'
export { delegatingStore, STORE_METHOD_NAMES } from './delegate.js'
export type { StoreErrorCode } from './error.js'
export { isStoreError, StoreError } from './error.js'
export { copiedToken, copy, frozenCopy, sameJson } from './json.js'
export { applicationKeyHashes } from './keys.js'
export { measuredStore } from './measured-store.js'
export { byKey, likePattern, nameMatcher } from './order.js'
export type { BoundedKind, Check, Op, TokenOp } from './protocol.js'
export { Scoped } from './scoped.js'
export { SortedIds, SortedRecords } from './sorted-ids.js'
export { PageFill, STORE_PAGE_BYTES, sealedBytes, storedBytes } from './stored-bytes.js'
export { TokenIndex, termKey, termKeysOf } from './token-index.js'
export type {
  ActorType,
  DerivedWrite,
  WriteBatch,
  WriteEffect,
  WriteEffectContext,
  WriteEffectHook,
  WriteEffects,
  WriteOutcome,
} from './write-effects.js'
export { withWriteEffects } from './write-effects.js'
