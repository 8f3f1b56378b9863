/**
 * The package entry publishes every record type (`src/kernel/types.ts`) and every input type
 * (`src/service/inputs.ts`) of the core, named one by one through the kernel's and the service's
 * faces (no import past a face). A type added to either file without its name in the entry fails
 * here, so the entry's list cannot fall behind.
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

const read = (path: string) =>
  ts.createSourceFile(
    path,
    readFileSync(fileURLToPath(new URL(`../../${path}`, import.meta.url)), 'utf8'),
    ts.ScriptTarget.Latest,
  )

/** The names a module exports: its exported declarations and its `export { … } from` lists. */
function exportedNames(path: string): { names: Set<string>; from: Map<string, string> } {
  const names = new Set<string>()
  const from = new Map<string, string>()
  for (const statement of read(path).statements) {
    if (ts.isExportDeclaration(statement)) {
      const clause = statement.exportClause
      if (!clause || !ts.isNamedExports(clause)) continue
      const target = statement.moduleSpecifier
      for (const element of clause.elements) {
        names.add(element.name.text)
        if (target && ts.isStringLiteral(target)) from.set(element.name.text, target.text)
      }
      continue
    }
    const exported = ts.canHaveModifiers(statement)
      ? ts.getModifiers(statement)?.some(({ kind }) => kind === ts.SyntaxKind.ExportKeyword)
      : false
    const named = statement as ts.Statement & { name?: ts.Identifier }
    if (exported && named.name) names.add(named.name.text)
  }
  return { names, from }
}

describe('the package entry’s public types', () => {
  const entry = exportedNames('entry/index.ts')

  it('names every record type of src/kernel/types.ts, through the kernel’s face', () => {
    const records = [...exportedNames('src/kernel/types.ts').names]
    expect(records.length).toBeGreaterThan(40)
    expect(records.filter((name) => !entry.names.has(name))).toEqual([])
    const past = records.filter((name) => entry.from.get(name) !== '../src/kernel/index.js')
    expect(past).toEqual([])
  })

  it('names every input type of src/service/inputs.ts, through the service’s face (the kernel’s for EmptyInput)', () => {
    const inputs = [...exportedNames('src/service/inputs.ts').names]
    expect(inputs.length).toBeGreaterThan(20)
    expect(inputs.filter((name) => !entry.names.has(name))).toEqual([])
    const past = inputs.filter(
      (name) => !['../src/service/index.js', '../src/kernel/index.js'].includes(entry.from.get(name) ?? ''),
    )
    expect(past).toEqual([])
  })
})
