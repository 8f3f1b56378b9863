// The public face of this folder: what other folders of src/ import (they import nothing else
// from it). Kept by hand: add a name when another folder needs it.

export { DEFAULT_STAGED_CHARS_PER_TENANT, withStaged } from './bounds.js'
export { deletionsWithLinks, withLinkDeletes } from './links.js'
export { allStaged, clearStaged, lockOps, writeDiscard, writeEnd } from './locks.js'
export { transactionOperations } from './operations.js'
export type { CallerWrite } from './view.js'
export {
  enlist,
  mustReadHeads,
  mustReadToken,
  openTransaction,
  readToken,
  stagedOf,
  stagedToken,
  tryWriteAs,
  writeAs,
} from './view.js'
