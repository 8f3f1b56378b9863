// The public face of this folder: what other folders of src/ import (they import nothing else
// from it). Kept by hand: add a name when another folder needs it.
export type { AuthorizeSessionInput } from './inputs.js'
export { authorizeSessionInput } from './schemas.js'
export type { CreatedSession } from './sessions.js'
export { DEFAULT_UNAUTHORIZED_SESSIONS_PER_TENANT, sessionOperations } from './sessions.js'
