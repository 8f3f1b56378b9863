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
 * What is rewritten:
 * - every relative module path in a `.ts`/`.mts`/`.js`/`.mjs` file (static and dynamic imports,
 *   re-exports, `vi.mock`, `new URL(…, import.meta.url)`): when it names a file that moved, or when
 *   the file holding it moved (a line merged in from a branch still written against its old
 *   place), it is made to point at the file's new place, relative to where the file is now;
 * - repository-relative mentions of a moved file (`src/x.ts`, `./src/x.ts`, `dist/src/x.js`,
 *   `dist/cjs/src/x.d.ts`, …) in any text file: configs, package.json exports, comments, Markdown.
 *
 * A path is left alone when it already names an existing file. Old and new both present (a merge
 * that re-added an old file) is reported and left for a person to merge.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, posix } from 'node:path'
import { fileURLToPath } from 'node:url'

/** Old path → new path, repository-relative. */
export const MOVES = [['src/index.ts', 'main/index.ts']]

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const FOLDERS = [
  'src',
  'main',
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
  if (sourceOf(here)) return null
  const bases = [posix.dirname(file)]
  const old = byNew.get(file)
  if (old) bases.push(posix.dirname(old))
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
    let relative = posix.relative(posix.dirname(file), written)
    if (!relative.startsWith('.')) relative = `./${relative}`
    return relative + suffix
  }
  return null
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
      `(^|[\\s"'\`(\\[,=])(\\./)?((?:dist/(?:cjs/)?)?)${escapeRegExp(stem)}(\\.d\\.ts|\\.ts|\\.js)(?=$|[\\s"'\`)\\],:;#?])`,
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
    if (file === 'scripts/relayout.mjs') continue
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
    moved++
  }
  return moved
}

const mode = process.argv[2] ?? ''
if (!['', '--rewrite-only', '--check'].includes(mode)) {
  console.error('usage: node scripts/relayout.mjs [--rewrite-only | --check]')
  process.exit(2)
}
if (mode === '--check') {
  const changed = rewriteAll({ dryRun: true })
  const left = MOVES.filter(([from]) => exists(from)).map(([from]) => from)
  for (const file of left) console.error(`relayout: ${file} is still at its old place`)
  for (const file of changed) console.error(`relayout: ${file} still points at an old place`)
  process.exit(changed.length + left.length > 0 ? 1 : 0)
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
const changed = rewriteAll()
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
