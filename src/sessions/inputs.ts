/**
 * The inputs of the session methods, each derived from the schema that validates it
 * (`v.InferInput`), so a misspelled field or a wrong type fails to compile. The schemas still check
 * every input at run time: JavaScript callers and HTTP requests may send anything.
 */
import type * as v from 'valibot'
import type { authorizeSessionInput } from './schemas.js'

/** Body of `sessions.authorize`. */
export type AuthorizeSessionInput = v.InferInput<typeof authorizeSessionInput>
