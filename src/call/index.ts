// The public face of this folder: one call's context, its pagination, the refusals of its writes
// and their retry. It sits above store/ (a call holds a store) and below every feature folder.
export { checkFailure, expectWritten } from './checks.js'
export type {
  CallbackPort,
  Ctx,
  Invocation,
  Principal,
  ProxyInvoked,
  ReactorInvoked,
  ResolvedOptions,
} from './context.js'
export type { CursorPage, Paginated } from './pagination.js'
export { cursorFor, paginated, positionFromCursor, rangeOf } from './pagination.js'
export type { CasTry } from './retry.js'
export { CAS_ATTEMPTS, retryCas } from './retry.js'
