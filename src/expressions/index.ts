// The public face of this folder: what other folders of src/ import (they import nothing else
// from it), listed by hand: the files beside it export more, to each other only.

export { MAX_STRING_LENGTH } from './cost.js'
export { FILTER_NAMES } from './filters.js'
export type { PathContext } from './json-path.js'
export { jsonPath, NODE_COST } from './json-path.js'
export { liquidDate, stripHtml } from './liquid-text.js'
export { applyMask, checkMask } from './masks.js'
export { MAX_TEMPLATE_LENGTH } from './parse.js'
export type { Template, Variables } from './templates.js'
export {
  compileTemplate,
  evaluateTemplate,
  isTemplateCached,
  renderTemplate,
  TEMPLATE_CACHE_ENTRIES,
  TEMPLATE_CACHE_PER_TENANT,
  templatesCached,
} from './templates.js'
