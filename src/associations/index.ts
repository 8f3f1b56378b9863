// The public face of this folder: what other folders of src/ import (they import nothing else
// from it). Written by `node scripts/relayout.mjs` from the exports of the files beside it: run
// it again after adding or removing an export.
export { childOperations } from './children.js'
