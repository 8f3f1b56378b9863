import { CARD_FILTERS } from './filters-cards.js'
import { COLLECTION_FILTERS } from './filters-collections.js'
import { NUMBER_FILTERS } from './filters-numbers.js'
import { TEXT_FILTERS } from './filters-text.js'
import type { Filter } from './values.js'

/**
 * Every filter offered, by name: Liquid's standard string, array and math filters and Basis
 * Theory's, one table per family (no name is in two).
 */
const FILTERS: Readonly<Record<string, Filter>> = Object.freeze({
  ...TEXT_FILTERS,
  ...NUMBER_FILTERS,
  ...COLLECTION_FILTERS,
  ...CARD_FILTERS,
})

/** The names of every filter templates may use. */
export const FILTER_NAMES: readonly string[] = Object.freeze(Object.keys(FILTERS).sort())

/** The filter named `name`, or undefined when there is none (an own name only: `toString` is none). */
export function filterNamed(name: string): Filter | undefined {
  return Object.hasOwn(FILTERS, name) ? FILTERS[name] : undefined
}
