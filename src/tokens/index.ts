// The public face of this folder: what other folders of src/ import (they import nothing else
// from it). Kept by hand: add a name when another folder needs it.
export { CVC_RETENTION_MS, patchGivesCvc, withCvcDeadline, withoutExpiredCvc } from './card-cvc.js'
export {
  checkTokenContents,
  createdAnswer,
  creationChecks,
  DEFAULT_CONTAINERS,
  newToken,
  requireFuture,
  shownToCaller,
} from './create.js'
export type { Created, NewToken } from './dedup.js'
export { findDuplicate, shownDuplicate, writeTokens } from './dedup.js'
export type { DetokenizationExpression, DetokenizeOptions } from './detokenize.js'
export {
  detokenize,
  detokenizeArgs,
  MAX_DETOKENIZED,
  parseExpression,
  throughFilters,
} from './detokenize.js'
export type {
  CreateTokenInput,
  DetokenizeInput,
  FlatMetadataFilter,
  ListChildrenQuery,
  ListTokensQuery,
  ListTokensV2Query,
  SearchTokensInput,
  SearchTokensV2Input,
  TokenizeInput,
  UpdateTokenInput,
} from './inputs.js'
export { tokenOperations } from './operations.js'
export {
  createTokenInput,
  createTokenIntentInput,
  gatherMetadataFilter,
  listChildrenInput,
  tokenId,
  updateTokenInput,
} from './schemas.js'
export type { ConvertTokenIntentInput, CreateTokenIntentInput, TokenIntent } from './token-intents.js'
export {
  cardBrand,
  intentForUse,
  intentSummary,
  parseTokenIntentInput,
  TOKEN_INTENT_TTL_MS,
  tokenIntentOperations,
} from './token-intents.js'
export type { TokenTypeRules } from './token-types.js'
export {
  abaValid,
  FINGERPRINT_PURPOSE,
  fingerprinted,
  fingerprintedNew,
  fingerprintOf,
  fingerprintSource,
  luhnValid,
  refingerprinted,
  TOKEN_TYPES,
  typeRules,
} from './token-types.js'
export type { Refuse } from './tokenize.js'
export { isTokenBody, MAX_TOKENIZE, MAX_TOKENIZE_DEPTH, planTokenize } from './tokenize.js'
export { mergePatch } from './update.js'
export type { VisibilityFields } from './visibility.js'
export {
  FAILS_ON_STORED_DATA,
  overStoredData,
  overStoredDataAsync,
  requireVisibilityKept,
  withoutStoredValues,
} from './visibility.js'
