// The public face of this folder: what other folders of src/ import (they import nothing else
// from it). Written by `node scripts/relayout.mjs` from the exports of the files beside it: run
// it again after adding or removing an export.
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
