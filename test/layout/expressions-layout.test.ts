import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import { CARD_FILTERS } from '../../src/expressions/filters-cards.js'
import { COLLECTION_FILTERS } from '../../src/expressions/filters-collections.js'
import { NUMBER_FILTERS } from '../../src/expressions/filters-numbers.js'
import { TEXT_FILTERS } from '../../src/expressions/filters-text.js'
import * as face from '../../src/expressions/index.js'

const folder = fileURLToPath(new URL('../../src/expressions/', import.meta.url))

/** The source files of src/expressions, by name. */
const files = readdirSync(folder).filter((name) => name.endsWith('.ts'))
const read = (name: string) => readFileSync(join(folder, name), 'utf8')

/** Every function of a source text (declared, arrow, method, accessor) longer than `max` lines. */
function longFunctions(name: string, max: number): string[] {
  const text = read(name)
  const source = ts.createSourceFile(name, text, ts.ScriptTarget.Latest, true)
  const found: string[] = []
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line
      if (last - first + 1 > max) found.push(`${name}:${first + 1}: ${last - first + 1} lines`)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

describe('src/expressions is split by responsibility', () => {
  it('keeps no module-level state: no `let` at the top level, no WeakMap, WeakSet or symbol', () => {
    const found = files.flatMap((name) =>
      read(name)
        .split('\n')
        .flatMap((line, i) =>
          /^let |^export let |new WeakMap|new WeakSet|Symbol\(/.test(line)
            ? [`${name}:${i + 1}: ${line}`]
            : [],
        ),
    )
    expect(found).toEqual([])
  })

  it('holds no file over 400 lines and no function over 60', () => {
    const big = files.flatMap((name) => {
      const lines = read(name).split('\n').length
      return lines > 400 ? [`${name}: ${lines} lines`] : []
    })
    expect(big).toEqual([])
    expect(files.flatMap((name) => longFunctions(name, 60))).toEqual([])
  })

  it('files each filter in one family table only, and offers every filter of every family', () => {
    const families = [TEXT_FILTERS, NUMBER_FILTERS, COLLECTION_FILTERS, CARD_FILTERS].map(Object.keys)
    const all = families.flat().sort()
    expect(all.filter((name, i) => all[i - 1] === name)).toEqual([])
    expect(face.FILTER_NAMES).toEqual(all)
    expect(face.FILTER_NAMES).toHaveLength(64)
  })

  it('its face exports the same names as before the split', () => {
    expect(Object.keys(face).sort()).toEqual([
      'FILTER_NAMES',
      'MAX_STRING_LENGTH',
      'MAX_TEMPLATE_LENGTH',
      'NODE_COST',
      'TEMPLATE_CACHE_ENTRIES',
      'TEMPLATE_CACHE_PER_TENANT',
      'applyMask',
      'checkMask',
      'compileTemplate',
      'evaluateTemplate',
      'isTemplateCached',
      'jsonPath',
      'liquidDate',
      'renderTemplate',
      'stripHtml',
      'templatesCached',
    ])
    expect(face.NODE_COST).toBe(32)
    expect(face.MAX_STRING_LENGTH).toBe(1_000_000)
    expect(face.MAX_TEMPLATE_LENGTH).toBe(4096)
  })
})
