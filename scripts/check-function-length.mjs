#!/usr/bin/env node
/**
 * Checks that no function in `src/` or `adapters/` is longer than `MAX_LINES` lines (from its first
 * token to its closing brace, its doc comment not counted), so a function fits a screen. Functions,
 * methods, arrow functions, getters and constructors all count; an object of methods returned by a
 * factory counts as the factory's lines. Test files (`*.test.ts`) are not checked.
 *
 * It fails (exit code 1, one line per function: lines, file:line, name) on any function over the
 * limit that is not in `ALLOWED` below, which names each exception as `file:function` with why.
 *
 * `node scripts/check-function-length.mjs [root]` checks the repository (or the tree at `root`).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

/** The most lines one function may span. */
export const MAX_LINES = 100

/** The folders whose files are checked. */
export const ROOTS = ['src', 'adapters']

/**
 * Functions allowed past the limit, as `file:function` (an anonymous function takes the name of the
 * variable or property it is assigned to) → why. Only declarative tables belong here: SQL text and
 * per-field tables, never a function that does several things.
 */
export const ALLOWED = new Map([
  ['adapters/postgres/write-function.ts:writeFunctionSql', 'SQL text: the PL/pgSQL source of tv_write'],
  ['adapters/postgres/schema.ts:tablesSql', 'SQL text: the schema of the tables'],
  [
    'src/kernel/token-record.ts:build',
    'a per-field table: one case per field of StoredToken, written out so the hot path keeps literal object shapes',
  ],
])

/** Every `.ts` file under `dir` (not `node_modules`, not tests), repository-relative with `/`. */
function sourceFiles(root, dir) {
  const out = []
  const walk = (at) => {
    let names
    try {
      names = readdirSync(at)
    } catch {
      return
    }
    for (const name of names) {
      if (name === 'node_modules' || name.startsWith('.')) continue
      const path = join(at, name)
      if (statSync(path).isDirectory()) walk(path)
      else if (/\.(?:ts|mts)$/.test(name) && !/\.test\.ts$/.test(name) && !name.endsWith('.d.ts'))
        out.push(relative(root, path).split(sep).join('/'))
    }
  }
  walk(join(root, dir))
  return out
}

/** A function's name: its own, or that of the variable, property or class member it is assigned to. */
function nameOf(node) {
  if (node.name) return node.name.getText()
  const parent = node.parent
  if (parent && (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) && parent.name)
    return parent.name.getText()
  if (ts.isConstructorDeclaration(node)) return 'constructor'
  return '(anonymous)'
}

/** The functions of one source text longer than `max` lines: `{ name, line, lines }` each. */
export function longFunctions(file, text, max = MAX_LINES) {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const found = []
  const visit = (node) => {
    if (ts.isFunctionLike(node) && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line
      const lines = last - first + 1
      if (lines > max) found.push({ name: nameOf(node), line: first + 1, lines })
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

/** The functions over the limit in the tree at `root`, allowed ones marked. */
export function check(root) {
  const problems = []
  const allowed = []
  for (const dir of ROOTS) {
    for (const file of sourceFiles(root, dir)) {
      for (const f of longFunctions(file, readFileSync(join(root, file), 'utf8'))) {
        const entry = { ...f, file, key: `${file}:${f.name}` }
        if (ALLOWED.has(entry.key)) allowed.push(entry)
        else problems.push(entry)
      }
    }
  }
  return { problems, allowed }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const root = process.argv[2] ?? join(fileURLToPath(import.meta.url), '..', '..')
  const { problems, allowed } = check(root)
  for (const p of problems)
    console.error(`check-function-length: ${p.lines} lines (over ${MAX_LINES}) ${p.file}:${p.line} ${p.name}`)
  if (problems.length) {
    console.error(
      'check-function-length: to fix, split each by responsibility into functions of its own (an object of methods: into groups of methods spread into it); only a declarative table (SQL text, a per-field table) goes in ALLOWED, with why',
    )
    process.exit(1)
  }
  const used = new Set(allowed.map((a) => a.key))
  const stale = [...ALLOWED.keys()].filter((key) => !used.has(key))
  console.log(
    `check-function-length: no function over ${MAX_LINES} lines but ${allowed.length} allowed` +
      (stale.length ? ` (allowed and now short enough, remove from ALLOWED: ${stale.join(', ')})` : ''),
  )
}
