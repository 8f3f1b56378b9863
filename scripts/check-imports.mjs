#!/usr/bin/env node
/**
 * Checks the direction of the imports between `src/`, `entry/`, `adapters/`, `bin/` and `testing/`:
 * static imports, re-exports and dynamic `import()` with a literal path.
 *
 * It fails (exit code 1, one line per problem) on
 * - any import circle at run time (a type-only import, `import type` or every name `type`, is
 *   erased by TypeScript and makes none: it is how a folder names a type of a folder above it);
 * - any import from `src/` into `adapters/`, `bin/` or `testing/` (the core knows no adapter);
 * - any import from one folder of `src/` into another folder's file other than its `index.ts`, once
 *   that folder has one (a folder's `index.ts` is its only door; files directly in `src/` may
 *   import anything).
 *
 * `node scripts/check-imports.mjs [root]` checks the repository (or the tree at `root`);
 * `findProblems(graph)` checks a given graph
 * (a map from a repository-relative file to the files it imports) and is what the tests feed.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, posix, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The folders whose files make up the graph. */
export const ROOTS = ['src', 'entry', 'adapters', 'bin', 'testing']

const SOURCE = /\.(?:ts|mts|js|mjs)$/
const STATIC =
  /(?:^|[;}\n])\s*(import|export)\s+(type\s+)?((?:[\w$*]+\s*,?\s*)?(?:\*\s+as\s+[\w$]+|\{[^}]*\}|[\w$]+)?)\s*from\s*['"]([^'"]+)['"]/g
const BARE = /(?:^|[;}\n])\s*import\s*['"]([^'"]+)['"]/g
const DYNAMIC = /(?:^|[^\w$.])import\s*\(\s*['"]([^'"]+)['"]\s*\)/g

/** Removes comments so an import written inside one is not counted. */
function stripComments(text) {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1')
}

/** Whether an import or export clause brings in types only (`import type`, or every name `type`). */
function typeOnly(keyword, clause) {
  if (keyword) return true
  const names = /^\{([^}]*)\}$/
    .exec(clause.trim())?.[1]
    ?.split(',')
    .map((name) => name.trim())
    .filter(Boolean)
  return names !== undefined && names.length > 0 && names.every((name) => name.startsWith('type '))
}

/**
 * The relative module paths a source text imports, each with whether only types come through it
 * (TypeScript erases those imports: they make no circle at run time).
 */
export function importsOf(text) {
  const found = []
  const code = stripComments(text)
  for (const match of code.matchAll(STATIC))
    found.push({ specifier: match[4], typeOnly: typeOnly(match[2], match[3]) })
  for (const match of code.matchAll(BARE)) found.push({ specifier: match[1], typeOnly: false })
  for (const match of code.matchAll(DYNAMIC)) found.push({ specifier: match[1], typeOnly: false })
  return found.filter(({ specifier }) => specifier.startsWith('.'))
}

/** The relative module specifiers a source text imports (static, re-export and literal dynamic). */
export function importSpecifiers(text) {
  return [...new Set(importsOf(text).map(({ specifier }) => specifier))]
}

function listFiles(root, folder) {
  const out = []
  let entries
  try {
    entries = readdirSync(join(root, folder))
  } catch {
    return out
  }
  for (const name of entries) {
    if (name === 'node_modules' || name === 'dist') continue
    const path = posix.join(folder, name)
    if (statSync(join(root, path)).isDirectory()) out.push(...listFiles(root, path))
    else if (SOURCE.test(name) && !name.endsWith('.d.ts')) out.push(path)
  }
  return out
}

/** Resolves `specifier` imported by `from` to a file in `files`, or the normalised path if none. */
function resolve(from, specifier, files) {
  const base = posix.normalize(posix.join(posix.dirname(from), specifier))
  const candidates = [
    base,
    base.replace(/\.js$/, '.ts'),
    base.replace(/\.mjs$/, '.mts'),
    `${base}.ts`,
    `${base}/index.ts`,
  ]
  return candidates.find((candidate) => files.has(candidate)) ?? base
}

/**
 * The import graphs of the repository at `root` (repository-relative file → files it imports):
 * `all` with every import, `runtime` without the type-only ones.
 */
export function buildGraphs(root, roots = ROOTS) {
  const files = new Set(roots.flatMap((folder) => listFiles(root, folder)))
  const all = new Map()
  const runtime = new Map()
  for (const file of files) {
    const found = importsOf(readFileSync(join(root, file), 'utf8'))
    const targets = (list) => [...new Set(list.map(({ specifier }) => resolve(file, specifier, files)))]
    all.set(file, targets(found))
    runtime.set(file, targets(found.filter(({ typeOnly }) => !typeOnly)))
  }
  return { all, runtime }
}

/** The import graph of the repository at `root`, every import included. */
export function buildGraph(root, roots = ROOTS) {
  return buildGraphs(root, roots).all
}

/** The top folder of a file (`src`, `adapters`, …) and, for `src/`, its feature folder or `null`. */
function place(file) {
  const parts = file.split('/')
  return { top: parts[0], feature: parts[0] === 'src' && parts.length > 2 ? parts[1] : null }
}

/** Every import circle of `graph`, each as the list of files around it (one per strongly connected set). */
export function findCircles(graph) {
  let counter = 0
  const index = new Map()
  const low = new Map()
  const stack = []
  const onStack = new Set()
  const circles = []
  const visit = (start) => {
    // Tarjan's algorithm without recursion, so a deep graph can't overflow the stack.
    const work = [[start, 0]]
    index.set(start, counter)
    low.set(start, counter++)
    stack.push(start)
    onStack.add(start)
    while (work.length > 0) {
      const frame = work[work.length - 1]
      const [node, next] = frame
      const edges = graph.get(node) ?? []
      if (next < edges.length) {
        frame[1] = next + 1
        const target = edges[next]
        if (!graph.has(target)) continue
        if (!index.has(target)) {
          index.set(target, counter)
          low.set(target, counter++)
          stack.push(target)
          onStack.add(target)
          work.push([target, 0])
        } else if (onStack.has(target)) {
          low.set(node, Math.min(low.get(node), index.get(target)))
        }
        continue
      }
      work.pop()
      const parent = work[work.length - 1]
      if (parent) low.set(parent[0], Math.min(low.get(parent[0]), low.get(node)))
      if (low.get(node) === index.get(node)) {
        const members = []
        let member
        do {
          member = stack.pop()
          onStack.delete(member)
          members.push(member)
        } while (member !== node)
        const selfLoop = (graph.get(node) ?? []).includes(node)
        if (members.length > 1 || selfLoop) circles.push(members.sort())
      }
    }
  }
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node)
  return circles
}

/**
 * Every problem as one readable line each; empty when the graph is fine. Circles are looked for in
 * `graph`, the direction of every import in `all` (give the runtime graph and the full one).
 */
export function findProblems(graph, all = graph) {
  const problems = []
  for (const circle of findCircles(graph)) problems.push(`import circle: ${circle.join(', ')}`)
  for (const [from, targets] of all) {
    const source = place(from)
    for (const target of targets) {
      const destination = place(target)
      if (source.top === 'src' && destination.top !== 'src') {
        problems.push(`core imports outside src/: ${from} → ${target}`)
      } else if (
        source.top === 'src' &&
        source.feature !== null &&
        destination.feature !== null &&
        source.feature !== destination.feature &&
        !target.endsWith('/index.ts') &&
        graph.has(`src/${destination.feature}/index.ts`)
      ) {
        problems.push(`past a folder's index.ts: ${from} → ${target}`)
      }
    }
  }
  return problems
}

const self = fileURLToPath(import.meta.url)
if (process.argv[1] && relative(process.argv[1], self) === '') {
  const root = process.argv[2] ?? join(dirname(self), '..')
  const { runtime, all } = buildGraphs(root)
  const graph = all
  const problems = findProblems(runtime, all)
  for (const problem of problems) console.error(problem)
  if (problems.length > 0) {
    console.error(`check-imports: ${problems.length} problem(s) in ${graph.size} files`)
    process.exit(1)
  }
  console.log(`check-imports: ${graph.size} files, no circle, no import out of src/`)
}
