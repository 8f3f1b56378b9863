#!/usr/bin/env node
/**
 * Checks the direction of the imports between `src/`, `entry/`, `adapters/`, `bin/` and `testing/`:
 * static imports, re-exports and dynamic `import()` with a literal path.
 *
 * It fails (exit code 1, one line per problem) on
 * - any import circle, type-only imports included (a type named upward is still an arrow upward:
 *   the lower file cannot be read, moved or tested without the upper one);
 * - any import from `src/` into `adapters/`, `bin/` or `testing/` (the core knows no adapter);
 * - any import out of `src/kernel/` into the rest of `src/` (the kernel is the ground floor);
 * - any import from one folder of `src/` into another folder's file other than its `index.ts`, once
 *   that folder has one (a folder's `index.ts` is its only door; files directly in `src/` may
 *   import anything);
 * - the same from outside `src/` (`adapters/`, `bin/`, `testing/`, `entry/`): a core folder is
 *   entered through its `index.ts`, except the imports listed in `FACE_BYPASSES`, each with why;
 * - any import of Node's network modules (`node:http`, `https`, `net`, `dns`, …) in `src/`: the
 *   core does no network I/O (the egress client is an adapter behind the `EgressClient` port);
 * - any module state in `src/` that hides intent: a module-level `let` or `var`, a `WeakMap` or a
 *   `WeakSet` (state lives in fields of objects the caller holds and passes in).
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

/**
 * Imports from outside `src/` past a core folder's `index.ts` that are let through, each group with
 * why. Each entry is one import (`from → target`), so a new bypass, even from a file listed here,
 * still fails the check. Empty: the package entry names the record and input types it publishes
 * through the kernel's and the service's faces (`test/layout/public-types.test.ts` keeps that list
 * whole). Never lengthen it without a reason written beside the entry.
 */
export const FACE_BYPASSES = []

/** The set of `from → target` imports `FACE_BYPASSES` lets through. */
export function allowedBypasses(bypasses = FACE_BYPASSES) {
  return new Set(bypasses.flatMap(({ imports }) => imports))
}

/** Node's modules that reach the network: none of them may be imported in `src/`. */
const NETWORK = /^(?:node:)?(?:http|https|http2|net|dns|tls|dgram)(?:\/[\w]+)?$/

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
 * The module specifiers a source text imports (static, re-export, bare and literal dynamic), each
 * with whether only types come through it.
 */
function allImportsOf(text) {
  const found = []
  const code = stripComments(text)
  for (const match of code.matchAll(STATIC))
    found.push({ specifier: match[4], typeOnly: typeOnly(match[2], match[3]) })
  for (const match of code.matchAll(BARE)) found.push({ specifier: match[1], typeOnly: false })
  for (const match of code.matchAll(DYNAMIC)) found.push({ specifier: match[1], typeOnly: false })
  return found
}

/**
 * The relative module paths a source text imports, each with whether only types come through it
 * (`import type`, or every name `type`).
 */
export function importsOf(text) {
  return allImportsOf(text).filter(({ specifier }) => specifier.startsWith('.'))
}

/** The packages (non-relative specifiers, `node:` modules included) a source text imports. */
export function packagesOf(text) {
  const names = allImportsOf(text).map(({ specifier }) => specifier)
  return [...new Set(names.filter((specifier) => !specifier.startsWith('.')))]
}

/** Module-level `let`/`var` and `WeakMap`/`WeakSet` (comments aside): one `line N: text` each. */
export function moduleStateOf(text) {
  const code = text
    .replace(/\/\*[\s\S]*?\*\//g, (comment) => comment.replace(/[^\n]/g, ''))
    .replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1')
  const found = []
  code.split('\n').forEach((line, i) => {
    if (/^(?:export\s+)?(?:let|var)\s/.test(line) || /\bWeak(?:Map|Set)\b/.test(line))
      found.push(`line ${i + 1}: ${line.trim()}`)
  })
  return found
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
 * `all` with every import, `runtime` without the type-only ones; `packages`, each file's
 * non-relative imports; and `state`, each `src/` file's module state (`moduleStateOf`).
 */
export function buildGraphs(root, roots = ROOTS) {
  const files = new Set(roots.flatMap((folder) => listFiles(root, folder)))
  const all = new Map()
  const runtime = new Map()
  const packages = new Map()
  const state = new Map()
  for (const file of files) {
    const text = readFileSync(join(root, file), 'utf8')
    const found = importsOf(text)
    const targets = (list) => [...new Set(list.map(({ specifier }) => resolve(file, specifier, files)))]
    all.set(file, targets(found))
    runtime.set(file, targets(found.filter(({ typeOnly }) => !typeOnly)))
    packages.set(file, packagesOf(text))
    if (file.startsWith('src/')) state.set(file, moduleStateOf(text))
  }
  return { all, runtime, packages, state }
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

/** The problem with the import `from` → `target`, or null: the rules on the direction of imports. */
function directionProblem(from, target, graph, allowed) {
  const source = place(from)
  const destination = place(target)
  if (source.top === 'src' && destination.top !== 'src')
    return `core imports outside src/: ${from} → ${target}`
  if (source.feature === 'kernel' && destination.top === 'src' && destination.feature !== 'kernel')
    return `kernel imports upward: ${from} → ${target}`
  const pastFace =
    destination.feature !== null &&
    source.feature !== destination.feature &&
    !target.endsWith('/index.ts') &&
    graph.has(`src/${destination.feature}/index.ts`)
  if (!pastFace) return null
  if (source.top === 'src') return `past a folder's index.ts: ${from} → ${target}`
  if (allowed.has(`${from} → ${target}`)) return null
  return `past a core folder's index.ts from outside src/: ${from} → ${target}`
}

/**
 * Every problem as one readable line each; empty when the graph is fine. Circles are looked for in
 * `graph` (give the full one, type-only imports included), the direction of every import in `all`,
 * Node's network modules in `packages` (file → non-relative specifiers). `allowed` lists the
 * imports from outside `src/` past a face that are let through (`from → target`, see
 * `FACE_BYPASSES`). No circle is let through. `state` maps a file to its module state
 * (`moduleStateOf`), refused in `src/`.
 */
export function findProblems(
  graph,
  all = graph,
  packages = new Map(),
  allowed = allowedBypasses(),
  state = new Map(),
) {
  const problems = []
  for (const circle of findCircles(graph)) problems.push(`import circle: ${circle.join(', ')}`)
  for (const [from, targets] of all) {
    for (const target of targets) {
      const problem = directionProblem(from, target, graph, allowed)
      if (problem) problems.push(problem)
    }
  }
  for (const [from, names] of packages) {
    if (place(from).top !== 'src') continue
    for (const name of names)
      if (NETWORK.test(name)) problems.push(`network module in src/: ${from} → ${name}`)
  }
  for (const [file, lines] of state) {
    if (place(file).top !== 'src') continue
    for (const line of lines) problems.push(`module state in src/: ${file} ${line}`)
  }
  return problems
}

/** How to fix each kind of problem, keyed by the start of its line; printed once per kind found. */
export const HOW_TO_FIX = [
  [
    'import circle',
    'move what the lower file names of the upper one (a type, a constant) into a file of its own that both import, or name a port the upper file fills',
  ],
  [
    'core imports outside src/',
    'the core knows no adapter: name a port in src/ and fill it from entry/ or the adapter',
  ],
  [
    'kernel imports upward',
    'move the thing the kernel names down into src/kernel/, or name a port in the kernel that the upper folder fills',
  ],
  [
    "past a folder's index.ts",
    "export the name from the folder's index.ts (its face) and import it from there",
  ],
  [
    "past a core folder's index.ts",
    "export the name from the folder's index.ts and import it from there (an `import type` through a face loads nothing at run time)",
  ],
  [
    'module state in src/',
    'keep the state in a field of an object the caller holds and passes in (the service, the store, a per-tenant record), and intent in fields of the objects it concerns',
  ],
  [
    'network module in src/',
    'do the network I/O in an adapter, behind a port the kernel names (EgressClient is one)',
  ],
]

/** The fix of each kind of problem in `problems`, one line each, in the order of `HOW_TO_FIX`. */
export function fixesFor(problems) {
  return HOW_TO_FIX.filter(([kind]) => problems.some((line) => line.startsWith(`${kind}:`))).map(
    ([kind, fix]) => `to fix "${kind}": ${fix}`,
  )
}

const self = fileURLToPath(import.meta.url)
if (process.argv[1] && relative(process.argv[1], self) === '') {
  const root = process.argv[2] ?? join(dirname(self), '..')
  const { all, packages, state } = buildGraphs(root)
  const graph = all
  const problems = findProblems(all, all, packages, allowedBypasses(), state)
  for (const problem of problems) console.error(problem)
  for (const fix of fixesFor(problems)) console.error(fix)
  if (problems.length > 0) {
    console.error(`check-imports: ${problems.length} problem(s) in ${graph.size} files`)
    process.exit(1)
  }
  console.log(
    `check-imports: ${graph.size} files, no circle, every arrow downward, faces kept, no module state in src/`,
  )
}
