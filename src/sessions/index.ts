// The public face of this folder: what other folders of src/ import (they import nothing else
// from it). Written by `node scripts/relayout.mjs` from the exports of the files beside it: run
// it again after adding or removing an export.
export type { AuthorizeSessionInput } from './inputs.js'
export { authorizeSessionInput } from './schemas.js'
export type { CreatedSession } from './sessions.js'
export { DEFAULT_UNAUTHORIZED_SESSIONS_PER_TENANT, sessionOperations } from './sessions.js'
