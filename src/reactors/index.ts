// The public face of this folder: what other folders of src/ import (they import nothing else
// from it). Kept by hand: add a name when another folder needs it.

export type { AcceptedRun, AsyncReactAccepted } from './async-react.js'
export { ASYNC_TIMEOUT_MS, acceptedOf, asksAsyncReact, runAccepted } from './async-react.js'
export type {
  EgressAnswer,
  EgressClient,
  EgressExchange,
  EgressLimits,
  EgressOrigin,
  EgressRequest,
  EgressResponse,
} from './egress.js'
export {
  abortReason,
  allowedUrl,
  checkEgressRequest,
  EGRESS_MAX_BODY_BYTES,
  EGRESS_MAX_REDIRECTS,
  EgressError,
  egressVia,
  parseEgressOrigins,
} from './egress.js'
export type { FormulaInput } from './formula-schemas.js'
export {
  formulaInput,
  isCanonicalBase64,
  listFormulasInput,
  MAX_CODE_LENGTH,
  MAX_ELEMENTS,
  requireDistinctNames,
} from './formula-schemas.js'
export type { OfficialFormulaAdmin, OfficialFormulaOptions } from './formulas.js'
export { formulaOperations, officialFormulaAdmin, shownFormula, validFormula } from './formulas.js'
export type {
  CreateReactorInput,
  ListReactorFormulasQuery,
  ListReactorsQuery,
  OfficialFormulaInput,
  PatchReactorInput,
  ReactInput,
  ReactorFormulaInput,
  UpdateReactorInput,
} from './inputs.js'
export type { JsonObject } from './react.js'
export { castArgs, castValue, reactResult, runFailure } from './react.js'
export type { ShownReactor } from './reactor-records.js'
export { castConfiguration } from './reactor-records.js'
export type { ReactorBody } from './reactor-schemas.js'
export {
  createReactorInput,
  listReactorsInput,
  patchReactorInput,
  reactInput,
  updateReactorInput,
} from './reactor-schemas.js'
export { reactorOperations } from './reactors.js'
