import { CARD_FILTERS } from './filters-cards.js'
import { COLLECTION_FILTERS } from './filters-collections.js'
import { NUMBER_FILTERS } from './filters-numbers.js'
import { TEXT_FILTERS } from './filters-text.js'
import type { Filter } from './values.js'

/**
 * Every filter offered, by name: Liquid's standard string, array and math filters and Basis
 * Theory's, one table per family (no name is in two).
 */
const FILTERS: ReadonlyMap<string, Filter> = new Map(
  [TEXT_FILTERS, NUMBER_FILTERS, COLLECTION_FILTERS, CARD_FILTERS].flatMap((family) =>
    Object.entries(family),
  ),
)

/** The names of every filter templates may use. */
export const FILTER_NAMES: readonly string[] = Object.freeze([...FILTERS.keys()].sort())

/** The filter named `name`, or undefined when there is none (`toString`, `constructor` are none). */
export function filterNamed(name: string): Filter | undefined {
  return FILTERS.get(name)
}
