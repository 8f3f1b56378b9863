/**
 * The inputs of the formula and reactor methods, each derived from the schema that validates it
 * (`v.InferInput`), so a misspelled field or a wrong type fails to compile. The schemas still check
 * every input at run time: JavaScript callers and HTTP requests may send anything.
 */
import type * as v from 'valibot'
import type { formulaInput, listFormulasInput } from './formula-schemas.js'
import type {
  createReactorInput,
  listReactorsInput,
  patchReactorInput,
  reactInput,
  updateReactorInput,
} from './reactor-schemas.js'

/** The body of a formula create or update, of either type. */
type FormulaBody = v.InferInput<typeof formulaInput>
/** Body of `reactorFormulas.create` and `reactorFormulas.update`: a private formula. */
export type ReactorFormulaInput = Omit<FormulaBody, 'type'> & { type: 'private' }
/** Body of `admin.createOfficialFormula` and `admin.updateOfficialFormula`: an official formula. */
export type OfficialFormulaInput = Omit<FormulaBody, 'type'> & { type: 'official' }
/** Query of `reactorFormulas.list`: `name` (wildcard filter), and `page`, `size`. */
export type ListReactorFormulasQuery = v.InferInput<typeof listFormulasInput>
/** Body of `reactors.create`: a formula (`formula: { id }` or `formula_id`) or inline `code`. */
export type CreateReactorInput = v.InferInput<typeof createReactorInput>
/** Body of `reactors.update` (PUT): replaces the reactor; without formula or code it keeps its own. */
export type UpdateReactorInput = v.InferInput<typeof updateReactorInput>
/** Body of `reactors.patch`: a JSON merge patch of the reactor. */
export type PatchReactorInput = v.InferInput<typeof patchReactorInput>
/** Body of `reactors.react`: `args` for the reactor's code. */
export type ReactInput = v.InferInput<typeof reactInput>
/** Query of `reactors.list`: `name` (wildcard filter), `id` (one or several), and `page`, `size`. */
export type ListReactorsQuery = v.InferInput<typeof listReactorsInput>
