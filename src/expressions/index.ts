// The public face of this folder: what other folders of src/ import (they import nothing else
// from it). Written by `node scripts/relayout.mjs` from the exports of the files beside it: run
// it again after adding or removing an export.

export type { Template, Variables } from './expressions.js'
export {
  applyMask,
  checkMask,
  compileTemplate,
  evaluateTemplate,
  FILTER_NAMES,
  isTemplateCached,
  MAX_STRING_LENGTH,
  MAX_TEMPLATE_LENGTH,
  renderTemplate,
  TEMPLATE_CACHE_ENTRIES,
  TEMPLATE_CACHE_PER_TENANT,
  templatesCached,
} from './expressions.js'
export type { PathContext } from './json-path.js'
export { jsonPath, NODE_COST } from './json-path.js'
export { liquidDate, stripHtml } from './liquid-text.js'
