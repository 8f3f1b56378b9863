// The public face of this folder: what other folders of src/ import (they import nothing else
// from it). Kept by hand: add a name when another folder needs it.
export {
  indexKey,
  MAX_INDEX_EXPRESSION,
  MAX_SEARCH_INDEXES,
  reindexed,
  SEARCH_INDEX_PURPOSE,
  searchIndexValues,
  withSearchIndexes,
} from './indexes.js'
export { listTokensV1, listTokensV2 } from './list.js'
export { WorkMeter } from './meter.js'
export { MAX_PAGE_BYTES, PageBytes, pageTooLarge, seenBytes } from './page-bytes.js'
export type { Found, IdSource, Paused, PlanNode } from './planner.js'
export { below, everyId, isPaused, planSource, successor } from './planner.js'
export type { Bound, Field, GlobPart, QueryNode, TimeField, Value } from './query.js'
export {
  globMatches,
  MAX_DEPTH,
  MAX_PATTERN,
  MAX_PATTERNS,
  MAX_QUERY_LENGTH,
  MAX_TERMS,
  parseQuery,
} from './query.js'
export { listV2Input, searchInput, searchV2Input } from './schemas.js'
export { SEARCH_PAGE, searchTokensV1, searchTokensV2 } from './search.js'
export type { Seen, WalkEnd, WalkOptions } from './token-view.js'
export {
  MAX_EXAMINED,
  newMeter,
  readWhole,
  tooBroad,
  walkChildren,
  walkTokens,
  YIELD_EVERY,
} from './token-view.js'
