#!/usr/bin/env node
/**
 * Checks the user documentation: README.md, every page under docs/ and bench/NOTES.md.
 *
 * - Every relative link (`[text](path)`, `[text](path#anchor)`, `[text](#anchor)`, images, and
 *   reference definitions `[name]: path`) names a file or folder that exists, and its `#anchor` a
 *   heading (or an `id="…"`) of that page (an anchor into a file that is not a page, such as a
 *   source line `#L10`, is not checked). A link to a page listed in `docs/.pending` (one
 *   repository path per line: pages other work is still writing) is accepted while the page is
 *   missing; once it exists it is checked like any other.
 * - No page holds two headings with the same anchor.
 * - Every fenced code block is accounted for. The line just before its fence is
 *   `<!-- fragment: <reason> -->` (not run: the reason says why), or `<!-- example: <path> -->`
 *   (the block is that file of the repository, byte for byte but for surrounding blank lines: the
 *   file runs in the test suite). Otherwise a `ts` block must import only from `tokenvault`, its
 *   subpaths and Node's `node:` modules (test/docs/run-blocks.test.ts runs each one as a program,
 *   on the memory store), and a `json` block must
 *   parse. Any other unmarked block (sh, js, python, http, none …) fails.
 *
 * `node scripts/check-docs.mjs [root]` checks the repository (or the tree at `root`); it prints one
 * line per problem (`file:line: problem`) and exits 1 when there is any.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The pages checked besides every `*.md` under docs/. */
export const PAGES = ['README.md', 'bench/NOTES.md']

/** Languages whose unmarked blocks are run (ts, by the docs test) or checked here (json). */
const TS = new Set(['ts', 'typescript'])
const JSON_LANGS = new Set(['json'])

/** The pages checked in the tree at `root`, as repository paths with `/`. */
export function pagesOf(root) {
  const pages = PAGES.filter((page) => existsSync(join(root, page)))
  const walk = (dir) => {
    if (!existsSync(join(root, dir))) return
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`
      if (entry.isDirectory()) walk(path)
      else if (entry.name.endsWith('.md')) pages.push(path)
    }
  }
  walk('docs')
  return pages
}

/** The paths `docs/.pending` lists (pages still being written), as repository paths. */
export function pendingPages(root) {
  const file = join(root, 'docs', '.pending')
  if (!existsSync(file)) return new Set()
  const lines = readFileSync(file, 'utf8').split('\n')
  return new Set(lines.map((line) => line.trim()).filter((line) => line && !line.startsWith('#')))
}

/**
 * The anchor GitHub gives a heading: its text without markup, lower-cased, punctuation dropped
 * (letters, digits, `_`, `-` and spaces kept), spaces turned into `-`.
 */
export function slug(heading) {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/[`*]/g, '')
    .trim()
    .toLowerCase()
  return text.replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-')
}

/**
 * A page split into its parts: headings (outside fenced blocks) and fenced blocks, each with its
 * 1-based line, and the lines outside fenced blocks (others' lines blanked, so line numbers stay).
 */
export function parsePage(text) {
  const lines = text.split('\n')
  const headings = []
  const blocks = []
  const prose = []
  let open = null
  lines.forEach((line, i) => {
    if (open) {
      prose.push('')
      const close = line.trim()
      if (close.length >= open.fence.length && close === open.fence[0].repeat(close.length)) {
        blocks.push({ ...open.block, body: open.body.join('\n') })
        open = null
      } else open.body.push(line)
      return
    }
    const fence = /^(\s*)(`{3,}|~{3,})\s*([^\s`]*)/.exec(line)
    if (fence) {
      const marker = /^<!--\s*(fragment|example):\s*(.*?)\s*-->\s*$/.exec(lines[i - 1]?.trim() ?? '')
      const block = {
        line: i + 1,
        lang: fence[3].toLowerCase(),
        mark: marker ? { kind: marker[1], value: marker[2] } : null,
      }
      open = { fence: fence[2], block, body: [] }
      prose.push('')
      return
    }
    prose.push(line)
    const heading = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line)
    if (heading) headings.push({ line: i + 1, text: heading[2], slug: slug(heading[2]) })
  })
  if (open) blocks.push({ ...open.block, body: open.body.join('\n'), unclosed: true })
  return { headings, blocks, prose }
}

/** The anchors a page offers: its headings' and every `id="…"` / `name="…"` in its HTML. */
function anchorsOf(text) {
  const { headings, prose } = parsePage(text)
  const anchors = new Set(headings.map((h) => h.slug))
  for (const m of prose.join('\n').matchAll(/<a\s[^>]*(?:id|name)="([^"]+)"/g)) anchors.add(m[1])
  return anchors
}

/** The relative links of a page's prose, each `{ line, target }` (inline code left out). */
export function linksOf(prose) {
  const links = []
  prose.forEach((raw, i) => {
    const line = raw.replace(/(`+)[^`]*?\1/g, '')
    for (const m of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g))
      links.push({ line: i + 1, target: m[1] })
    const def = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/.exec(line)
    if (def) links.push({ line: i + 1, target: def[1] })
  })
  return links.filter((link) => !/^[a-z][a-z0-9+.-]*:/i.test(link.target))
}

/** The problems of one link from `page`, or none. */
function linkProblem(root, page, target, pending, anchorsCache) {
  const [pathPart, anchor] = target.split('#', 2)
  const path = pathPart
    ? relative(root, resolve(root, dirname(page), decodeURI(pathPart)))
        .split(sep)
        .join('/')
    : page
  const file = join(root, path)
  if (!existsSync(file)) {
    if (pending.has(path)) return null
    return `broken link: ${target} (no file ${path})`
  }
  if (anchor === undefined || anchor === '') return null
  if (statSync(file).isDirectory()) return `broken link: ${target} (an anchor into a folder)`
  // Only a page's headings are known; an anchor into another file (a source line, `#L10`) is GitHub's.
  if (!path.endsWith('.md')) return null
  if (!anchorsCache.has(path)) anchorsCache.set(path, anchorsOf(readFileSync(file, 'utf8')))
  if (!anchorsCache.get(path).has(decodeURI(anchor)))
    return `broken link: ${target} (no heading #${anchor} in ${path})`
  return null
}

/** The import specifiers of a TypeScript block (static imports and `export … from`). */
export function importsOf(code) {
  const specifiers = []
  for (const m of code.matchAll(/^\s*(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]/gm))
    specifiers.push(m[1])
  for (const m of code.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm)) specifiers.push(m[1])
  for (const m of code.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) specifiers.push(m[1])
  return specifiers
}

/** The problem of one fenced block, or null when it is accounted for. */
function blockProblem(root, block) {
  if (block.unclosed) return 'code block never closed'
  if (block.mark?.kind === 'fragment') return block.mark.value ? null : 'fragment marker without a reason'
  if (block.mark?.kind === 'example') {
    const file = join(root, block.mark.value)
    if (!block.mark.value || !existsSync(file)) return `example marker names no file: ${block.mark.value}`
    if (readFileSync(file, 'utf8').trim() !== block.body.trim())
      return `block differs from ${block.mark.value}`
    return null
  }
  if (TS.has(block.lang)) {
    const foreign = importsOf(block.body).filter(
      (s) => s !== 'tokenvault' && !s.startsWith('tokenvault/') && !s.startsWith('node:'),
    )
    if (foreign.length)
      return `ts block imports ${foreign.join(', ')} (only tokenvault and node: modules run; else mark it <!-- fragment: why -->)`
    return null
  }
  if (JSON_LANGS.has(block.lang)) {
    try {
      JSON.parse(block.body)
      return null
    } catch (error) {
      return `json block does not parse (${error.message}); mark it <!-- fragment: why --> if it is not JSON`
    }
  }
  return `unmarked ${block.lang || 'plain'} code block: put <!-- fragment: <why it is not run> --> on the line before its fence`
}

/** Every problem of the docs in the tree at `root`, as `page:line: problem` lines. */
export function check(root) {
  const pending = pendingPages(root)
  const anchorsCache = new Map()
  const problems = []
  for (const page of pagesOf(root)) {
    const { headings, blocks, prose } = parsePage(readFileSync(join(root, page), 'utf8'))
    const seen = new Map()
    for (const h of headings) {
      if (seen.has(h.slug))
        problems.push(`${page}:${h.line}: heading "${h.text}" duplicates line ${seen.get(h.slug)}`)
      else seen.set(h.slug, h.line)
    }
    for (const link of linksOf(prose)) {
      const problem = linkProblem(root, page, link.target, pending, anchorsCache)
      if (problem) problems.push(`${page}:${link.line}: ${problem}`)
    }
    for (const block of blocks) {
      const problem = blockProblem(root, block)
      if (problem) problems.push(`${page}:${block.line}: ${problem}`)
    }
  }
  return problems
}

/** The blocks the docs test runs: every unmarked ts block, each `{ page, line, code }`. */
export function runnableBlocks(root) {
  const runnable = []
  for (const page of pagesOf(root)) {
    for (const block of parsePage(readFileSync(join(root, page), 'utf8')).blocks) {
      if (!block.mark && TS.has(block.lang)) runnable.push({ page, line: block.line, code: block.body })
    }
  }
  return runnable
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const root = process.argv[2] ?? join(fileURLToPath(import.meta.url), '..', '..')
  const problems = check(root)
  for (const p of problems) console.error(`check-docs: ${p}`)
  if (problems.length) process.exit(1)
  const pages = pagesOf(root)
  const listed = [...pendingPages(root)]
  const pending = listed.filter((path) => !existsSync(join(root, path)))
  const landed = listed.filter((path) => existsSync(join(root, path)))
  console.log(
    `check-docs: ${pages.length} pages, links, headings and code blocks accounted for` +
      (pending.length ? ` (${pending.length} pending pages: ${pending.join(', ')})` : '') +
      (landed.length ? ` (landed, remove from docs/.pending: ${landed.join(', ')})` : ''),
  )
}
