import type { Json } from '../kernel/index.js'
import { type ExpressionBudget, expressionBudget, invalid, MAX_INPUT_DEPTH } from '../kernel/index.js'
import { compileTemplate } from './templates.js'

/**
 * Masks: any JSON whose strings are templates, evaluated with a token's `data` bound (shown under
 * the `mask` transform), and checked when a token or a token type is written.
 */

/** Sets `out[key]`; defined, not assigned, where assigning would set the prototype instead. */
function put(out: Record<string, Json>, key: string, item: Json): void {
  if (key === '__proto__')
    Object.defineProperty(out, key, { value: item, enumerable: true, writable: true, configurable: true })
  else out[key] = item
}

/**
 * `value` with `f` applied to every string in it (at any depth), each with a function that makes
 * its dotted path under `field` (made only when asked: a mask of 80 000 plain strings builds no path).
 */
function walk(value: Json, field: string, f: (s: string, path: () => string) => Json): Json {
  const keys: (string | number)[] = []
  const path = () => [field, ...keys].join('.')
  const go = (v: Json): Json => {
    if (keys.length > MAX_INPUT_DEPTH)
      throw invalid(path(), `is nested deeper than ${MAX_INPUT_DEPTH} levels`)
    if (typeof v === 'string') return f(v, path)
    if (Array.isArray(v)) {
      const out: Json[] = new Array(v.length)
      for (let i = 0; i < v.length; i++) {
        keys.push(i)
        out[i] = go(v[i]!)
        keys.pop()
      }
      return out
    }
    if (v !== null && typeof v === 'object') {
      const out: Record<string, Json> = {}
      for (const key of Object.keys(v)) {
        keys.push(key)
        put(out, key, go(v[key]!))
        keys.pop()
      }
      return out
    }
    return v
  }
  return go(value)
}

/**
 * A mask applied to token data: every string in `mask` (at any depth) is a template evaluated with
 * `data` bound; other values stay as they are. Errors name the string's path under `field`. Every
 * template of the mask charges one `budget` (default: a fresh one for this mask): a mask of 5000
 * templates costs what its 5000 evaluations make, not one template's share.
 */
export function applyMask(
  mask: Json,
  data: Json,
  field = 'mask',
  budget: ExpressionBudget = expressionBudget(),
  tenant = '',
): Json {
  return walk(mask, field, (s, path) => {
    if (!s.includes('{{')) return s
    return compileTemplate(s, path, tenant).evaluate({ data }, budget)
  })
}

/** Checks every template in a mask parses (400 naming its path otherwise), without evaluating it. */
export function checkMask(mask: Json, field = 'mask', tenant = ''): void {
  walk(mask, field, (s, path) => {
    if (s.includes('{{')) compileTemplate(s, path, tenant)
    return s
  })
}
