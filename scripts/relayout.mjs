#!/usr/bin/env node
/**
 * Moves the files of `src/` into their feature folders and rewrites every path that points at an
 * old place, in the whole repository. Idempotent: a second run changes nothing.
 *
 *   node scripts/relayout.mjs                 # `git mv` each old path still present, then rewrite
 *   node scripts/relayout.mjs --rewrite-only  # only rewrite paths (after merging a branch written
 *                                             # against the old layout)
 *   node scripts/relayout.mjs --check         # rewrite nothing; list what would change, exit 1 if any
 *
 * A folder given after the mode is worked on instead of this repository (the tests do so).
 *
 * What is rewritten:
 * - every relative module path in a `.ts`/`.mts`/`.js`/`.mjs` file (static and dynamic imports,
 *   re-exports, `vi.mock`, `new URL(…, import.meta.url)`): when it names a file that moved, or when
 *   the file holding it moved (a line merged in from a branch still written against its old
 *   place), it is made to point at the file's new place, relative to where the file is now;
 * - repository-relative mentions of a moved file (`src/x.ts`, `./src/x.ts`, `dist/src/x.js`,
 *   `dist/cjs/src/x.d.ts`, …) in any text file: configs, package.json exports, comments, Markdown.
 *
 * - `src/store/memory-state.ts`, when a merge brought the whole class back, is split again into
 *   `src/store/memory/` (`scripts/split-memory-state.mjs`);
 * - an import from one folder of `src/` into a file of another goes through that folder's
 *   `index.ts` (its public face), which this script writes: every export of the folder's files.
 *
 * A path is otherwise left alone when it already names an existing file. Old and new both present
 * (a merge that re-added an old file) is reported and left for a person to merge.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, posix, resolve as resolvePath } from 'node:path'
import { fileURLToPath } from 'node:url'
import { splitMemoryState } from './split-memory-state.mjs'

/** Old path → new path, repository-relative. */
export const MOVES = [
  ['src/index.ts', 'entry/index.ts'],
  ['main/index.ts', 'entry/index.ts'],
  ['src/access.ts', 'src/applications/access.ts'],
  ['src/admin-view.ts', 'src/service/admin-view.ts'],
  ['src/application-keys.ts', 'src/applications/keys.ts'],
  ['src/applications.ts', 'src/applications/applications.ts'],
  ['src/auth.ts', 'src/applications/auth.ts'],
  ['src/budget.ts', 'src/kernel/budget.ts'],
  ['src/callback.ts', 'src/reactors/callback.ts'],
  ['src/card-cvc.ts', 'src/tokens/card-cvc.ts'],
  ['src/checks.ts', 'src/kernel/checks.ts'],
  ['src/children.ts', 'src/associations/children.ts'],
  ['src/clock.ts', 'src/kernel/clock.ts'],
  ['src/context.ts', 'src/kernel/context.ts'],
  ['src/crypto.ts', 'src/kernel/ids.ts'],
  ['src/dedup.ts', 'src/tokens/dedup.ts'],
  ['src/detokenize.ts', 'src/tokens/detokenize.ts'],
  ['src/egress.ts', 'src/reactors/egress.ts'],
  ['src/errors.ts', 'src/kernel/errors.ts'],
  ['src/expressions.ts', 'src/expressions/expressions.ts'],
  ['src/fixtures.ts', 'src/service/fixtures.ts'],
  ['src/formulas.ts', 'src/reactors/formulas.ts'],
  ['src/idempotency.ts', 'src/service/idempotency.ts'],
  ['src/inputs.ts', 'src/service/inputs.ts'],
  ['src/journal.ts', 'src/service/journal.ts'],
  ['src/json-path.ts', 'src/expressions/json-path.ts'],
  ['src/links.ts', 'src/transactions/links.ts'],
  ['src/liquid-text.ts', 'src/expressions/liquid-text.ts'],
  ['src/list-tokens-v2.ts', 'src/search/list.ts'],
  ['src/locks.ts', 'src/transactions/locks.ts'],
  ['src/pagination.ts', 'src/kernel/pagination.ts'],
  ['src/react.ts', 'src/reactors/react.ts'],
  ['src/reactors.ts', 'src/reactors/reactors.ts'],
  ['src/retry.ts', 'src/kernel/retry.ts'],
  ['src/runner.ts', 'src/kernel/runner.ts'],
  ['src/search-expressions.ts', 'src/search/indexes.ts'],
  ['src/search-plan.ts', 'src/search/planner.ts'],
  ['src/search-query.ts', 'src/search/query.ts'],
  ['src/search.ts', 'src/search/search.ts'],
  ['src/service.ts', 'src/service/service.ts'],
  ['src/sessions.ts', 'src/sessions/sessions.ts'],
  ['src/state-transfer.ts', 'src/lifecycle/state-transfer.ts'],
  ['src/sweep.ts', 'src/lifecycle/sweep.ts'],
  ['src/tenant-lru.ts', 'src/kernel/tenant-lru.ts'],
  ['src/tenants.ts', 'src/service/tenants.ts'],
  ['src/token-create.ts', 'src/tokens/create.ts'],
  ['src/token-types.ts', 'src/tokens/token-types.ts'],
  ['src/token-view.ts', 'src/search/token-view.ts'],
  ['src/tokenize.ts', 'src/tokens/tokenize.ts'],
  ['src/tokens.ts', 'src/tokens/operations.ts'],
  ['src/transactions.ts', 'src/transactions/operations.ts'],
  ['src/txview.ts', 'src/transactions/view.ts'],
  ['src/types.ts', 'src/kernel/types.ts'],
  ['src/unchecked.ts', 'src/service/unchecked.ts'],
  ['src/validate.ts', 'src/kernel/validate.ts'],
  ['src/visibility.ts', 'src/tokens/visibility.ts'],
  ['src/schemas/access.ts', 'src/applications/permissions.ts'],
  ['src/schemas/application.ts', 'src/applications/schemas.ts'],
  ['src/schemas/common.ts', 'src/kernel/schemas.ts'],
  ['src/schemas/date-time.ts', 'src/kernel/date-time.ts'],
  ['src/schemas/formula.ts', 'src/reactors/formula-schemas.ts'],
  ['src/schemas/reactor.ts', 'src/reactors/reactor-schemas.ts'],
  ['src/schemas/search.ts', 'src/search/schemas.ts'],
  ['src/schemas/session.ts', 'src/sessions/schemas.ts'],
  ['src/schemas/token.ts', 'src/tokens/schemas.ts'],
]

const args = process.argv.slice(2)
/** The repository: this script's, or the folder given after the mode (for tests on a small tree). */
const root = args[1] ? resolvePath(args[1]) : join(dirname(fileURLToPath(import.meta.url)), '..')
const FOLDERS = [
  'src',
  'entry',
  'adapters',
  'bin',
  'testing',
  'test',
  'bench',
  'examples',
  'scripts',
  'docs',
  '.ci',
]
const CODE = /\.(?:ts|mts|cts|js|mjs|cjs)$/
const TEXT = /\.(?:ts|mts|cts|js|mjs|cjs|json|md|yml|yaml|sh)$/
const SKIP = new Set(['node_modules', 'dist', '.git', 'reports', '.stryker-tmp', 'coverage'])

const byOld = new Map(MOVES)
/** The files this run moved (their text still written for their old place). */
const justMoved = new Set()
const byNew = new Map(MOVES.map(([from, to]) => [to, from]))

const exists = (path) => existsSync(join(root, path)) && statSync(join(root, path)).isFile()

function walk(folder, out) {
  let entries
  try {
    entries = readdirSync(join(root, folder), { withFileTypes: true })
  } catch {
    return out
  }
  for (const entry of entries) {
    if (SKIP.has(entry.name)) continue
    const path = folder ? posix.join(folder, entry.name) : entry.name
    if (entry.isDirectory()) {
      if (folder) walk(path, out)
    } else if (TEXT.test(entry.name)) out.push(path)
  }
  return out
}

/** The text files the rewrite reads: the folders above and the configuration files at the top. */
function textFiles() {
  const top = walk('', []).filter((path) => !path.startsWith('package-lock'))
  return [...top, ...FOLDERS.flatMap((folder) => walk(folder, []))]
}

/** The source file a module path names: `.js` written for a `.ts` file, as TypeScript's NodeNext does. */
function sourceOf(path) {
  if (exists(path)) return path
  for (const [js, ts] of [
    ['.js', '.ts'],
    ['.mjs', '.mts'],
    ['.cjs', '.cts'],
  ]) {
    if (path.endsWith(js) && exists(path.slice(0, -js.length) + ts)) return path.slice(0, -js.length) + ts
  }
  return null
}

/** The old source path a module path names (it no longer exists), or null. */
function movedSource(path) {
  if (byOld.has(path)) return path
  for (const [js, ts] of [
    ['.js', '.ts'],
    ['.mjs', '.mts'],
  ]) {
    if (path.endsWith(js) && byOld.has(path.slice(0, -js.length) + ts)) return path.slice(0, -js.length) + ts
  }
  return null
}

/** `specifier` written in `file` (now at its place), pointed at the target's current place, or null. */
function rewriteSpecifier(file, specifier) {
  const [bare, suffix = ''] = specifier.split(/(?=[?#])/)
  const here = posix.normalize(posix.join(posix.dirname(file), bare))
  const old = byNew.get(file)
  // A file this run moved was written for its old place; any other, for where it is (a line merged
  // in from a branch written against the old layout is read from the old place when that names a file).
  const bases = justMoved.has(file) ? [posix.dirname(old)] : [posix.dirname(file)]
  if (old && !justMoved.has(file)) bases.push(posix.dirname(old))
  const found = justMoved.has(file) ? null : sourceOf(here)
  if (found && !faceFor(file, found)) return null
  for (const base of bases) {
    const target = posix.normalize(posix.join(base, bare))
    let source = sourceOf(target)
    let written = target
    const moved = source ? null : movedSource(target)
    if (moved) {
      source = byOld.get(moved)
      if (!exists(source)) continue
      written = target.endsWith('.js') && moved.endsWith('.ts') ? source.replace(/\.ts$/, '.js') : source
    }
    if (!source) continue
    const face = faceFor(file, source)
    if (face) written = face.replace(/\.ts$/, '.js')
    else if (written === here) return null
    let relative = posix.relative(posix.dirname(file), written)
    if (!relative.startsWith('.')) relative = `./${relative}`
    return relative + suffix
  }
  return null
}

/** The folder of `src/` a file is in (`src/tokens/create.ts` → `tokens`), or null. */
const folderOf = (path) => /^src\/([^/]+)\/[^/]+$/.exec(path)?.[1] ?? null

/**
 * The face (`index.ts`) that `file` must import `target` through: the target's folder's, when both
 * are in different folders of `src/` and the target is not that face itself; else null.
 */
function faceFor(file, target) {
  const from = folderOf(file)
  const to = folderOf(target)
  if (!from || !to || from === to || target.endsWith('/index.ts')) return null
  const face = `src/${to}/index.ts`
  return exists(face) ? face : null
}

const STRING = /(['"`])(\.\.?\/[^'"`\s]*)\1/g

function rewriteCode(file, text) {
  return text.replace(STRING, (whole, quote, specifier) => {
    const next = rewriteSpecifier(file, specifier)
    return next && next !== specifier ? `${quote}${next}${quote}` : whole
  })
}

const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** Repository-relative mentions of each moved file, as a regular expression per move. */
const MENTIONS = MOVES.map(([from, to]) => {
  const stem = from.replace(/\.ts$/, '')
  return {
    pattern: new RegExp(
      `(^|[\\s"'\`(\\[,=])(\\./)?((?:dist/(?:cjs/)?)?)${escapeRegExp(stem)}(\\.d\\.ts|\\.ts|\\.js)(?=$|[\\s"'\`)\\],:;#?]|\\.(?:\\s|$))`,
      'gm',
    ),
    stem: to.replace(/\.ts$/, ''),
  }
})

function rewriteMentions(text) {
  let out = text
  for (const { pattern, stem } of MENTIONS) {
    out = out.replace(pattern, (_whole, before, dot = '', dist = '', extension) => {
      return `${before}${dot}${dist}${stem}${extension}`
    })
  }
  return out
}

/** Rewrites every file; answers the files changed (written unless `dryRun`). */
export function rewriteAll({ dryRun = false } = {}) {
  const changed = []
  for (const file of textFiles()) {
    // This script and its test hold old paths on purpose.
    if (file === 'scripts/relayout.mjs' || file === 'test/layout/relayout.test.ts') continue
    const text = readFileSync(join(root, file), 'utf8')
    let next = CODE.test(file) ? rewriteCode(file, text) : text
    next = rewriteMentions(next)
    if (next !== text) {
      changed.push(file)
      if (!dryRun) writeFileSync(join(root, file), next)
    }
  }
  return changed
}

const FACE_HEADER = [
  '// The public face of this folder: what other folders of src/ import (they import nothing else',
  '// from it). Written by `node scripts/relayout.mjs` from the exports of the files beside it: run',
  '// it again after adding or removing an export.',
]

/** The names a TypeScript source exports, each with whether it is a type only. */
function exportsOf(text) {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1')
  const names = []
  const declared = [
    [/^export\s+(?:declare\s+)?(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)/gm, false],
    [/^export\s+(?:declare\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)/gm, false],
    [/^export\s+(?:declare\s+)?(?:abstract\s+)?class\s+([A-Za-z_$][\w$]*)/gm, false],
    [/^export\s+(?:declare\s+)?(?:const\s+)?enum\s+([A-Za-z_$][\w$]*)/gm, false],
    [/^export\s+(?:declare\s+)?interface\s+([A-Za-z_$][\w$]*)/gm, true],
    [/^export\s+(?:declare\s+)?type\s+([A-Za-z_$][\w$]*)\s*[=<]/gm, true],
  ]
  for (const [pattern, type] of declared)
    for (const match of code.matchAll(pattern)) names.push({ name: match[1], type })
  for (const match of code.matchAll(/^export\s+(type\s+)?\{([^}]*)\}/gm)) {
    for (const spec of match[2]
      .split(',')
      .map((part) => part.trim())
      .filter(Boolean)) {
      const type = Boolean(match[1]) || spec.startsWith('type ')
      const name = spec
        .replace(/^type\s+/, '')
        .split(/\s+as\s+/)
        .pop()
        .trim()
      if (name !== 'default') names.push({ name, type })
    }
  }
  return names
}

/** What a face exports, whatever its formatting: sorted `module type name` lines. */
function signature(text) {
  const lines = []
  for (const match of text.matchAll(/export\s+(type\s+)?\{([^}]*)\}\s*from\s*'([^']+)'/g)) {
    for (const spec of match[2]
      .split(',')
      .map((part) => part.trim())
      .filter(Boolean)) {
      const type = Boolean(match[1]) || spec.startsWith('type ')
      lines.push(`${match[3]} ${type} ${spec.replace(/^type\s+/, '')}`)
    }
  }
  return lines.sort().join('\n')
}

/** Writes each folder's `index.ts` of `src/`: every export of the files in it, by name. */
function writeFaces({ dryRun = false } = {}) {
  const changed = []
  let folders
  try {
    folders = readdirSync(join(root, 'src'), { withFileTypes: true }).filter((entry) => entry.isDirectory())
  } catch {
    return changed
  }
  for (const folder of folders) {
    const dir = `src/${folder.name}`
    const files = readdirSync(join(root, dir))
      .filter((name) => /\.ts$/.test(name) && !/\.(?:test|d)\.ts$/.test(name) && name !== 'index.ts')
      .sort()
    if (files.length === 0) continue
    const seen = new Set()
    const lines = [...FACE_HEADER]
    for (const name of files) {
      const found = exportsOf(readFileSync(join(root, dir, name), 'utf8')).filter((entry) => {
        if (seen.has(entry.name)) {
          console.error(
            `relayout: ${dir}/${name} exports ${entry.name} again; ${dir}/index.ts keeps the first`,
          )
          return false
        }
        seen.add(entry.name)
        return true
      })
      const module = `./${name.replace(/\.ts$/, '.js')}`
      const values = found.filter((entry) => !entry.type).map((entry) => entry.name)
      const types = found.filter((entry) => entry.type).map((entry) => entry.name)
      if (values.length) lines.push(`export { ${values.join(', ')} } from '${module}'`)
      if (types.length) lines.push(`export type { ${types.join(', ')} } from '${module}'`)
    }
    const path = `${dir}/index.ts`
    const text = `${lines.join('\n')}\n`
    const before = exists(path) ? readFileSync(join(root, path), 'utf8') : null
    // Compared by what they export: biome sorts and wraps the lines after the first write.
    if (before !== null && signature(before) === signature(text)) continue
    changed.push(path)
    if (!dryRun) writeFileSync(join(root, path), text)
  }
  return changed
}

/** `git mv` of each old path still present whose new path is free; reports old and new both present. */
function moveAll() {
  let moved = 0
  for (const [from, to] of MOVES) {
    if (!exists(from)) continue
    if (exists(to)) {
      console.error(
        `relayout: both ${from} and ${to} exist; merge ${from} into ${to} by hand, then delete it`,
      )
      process.exitCode = 1
      continue
    }
    mkdirSync(dirname(join(root, to)), { recursive: true })
    execFileSync('git', ['mv', from, to], { cwd: root })
    justMoved.add(to)
    moved++
  }
  return moved
}

const mode = args[0] ?? ''
if (!['', '--rewrite-only', '--check'].includes(mode)) {
  console.error('usage: node scripts/relayout.mjs [--rewrite-only | --check] [root]')
  process.exit(2)
}
if (mode === '--check') {
  const changed = [...writeFaces({ dryRun: true }), ...rewriteAll({ dryRun: true })]
  const left = MOVES.filter(([from]) => exists(from)).map(([from]) => from)
  const whole =
    exists('src/store/memory-state.ts') &&
    /^export class MemoryState \{/m.test(readFileSync(join(root, 'src/store/memory-state.ts'), 'utf8'))
  if (whole)
    console.error(
      'relayout: src/store/memory-state.ts holds the whole class: not split into src/store/memory/',
    )
  for (const file of left) console.error(`relayout: ${file} is still at its old place`)
  for (const file of changed) console.error(`relayout: ${file} is not as the layout writes it`)
  process.exit(changed.length + left.length > 0 || whole ? 1 : 0)
}
if (mode === '--rewrite-only') {
  for (const [from, to] of MOVES) {
    if (exists(from) && exists(to)) {
      console.error(
        `relayout: both ${from} and ${to} exist; merge ${from} into ${to} by hand, then delete it`,
      )
      process.exitCode = 1
    }
  }
}
const moved = mode === '' ? moveAll() : 0
// A branch written before the reference model was split brings it back whole: split it again.
const split = exists('src/store/memory-state.ts') ? splitMemoryState(root) : []
const faces = [...split, ...writeFaces()]
const changed = [...faces, ...rewriteAll()]
// Rewritten paths sort differently: put the imports of each changed source file back in order.
const sources = changed.filter((file) => CODE.test(file))
if (sources.length > 0) {
  const biome = join(root, 'node_modules/.bin/biome')
  if (existsSync(biome)) {
    try {
      execFileSync(biome, ['check', '--write', '--no-errors-on-unmatched', ...sources], {
        cwd: root,
        stdio: 'ignore',
      })
    } catch {
      console.error('relayout: `npx biome check --write` has more to say about the rewritten files')
    }
  }
}
console.log(`relayout: ${moved} file(s) moved, ${changed.length} file(s) rewritten`)
for (const file of changed) console.log(`  ${file}`)
