#!/usr/bin/env node
/**
 * Splits the reference model when `src/store/memory-state.ts` holds the whole `MemoryState` class
 * again (a branch written before the split, merged by taking its whole file): its maps, checks,
 * ops and reads go to `src/store/memory/{maps,checks,ops,reads}.ts`, each class extending the one
 * before, and `memory-state.ts` keeps `StateRecords`, `LockTuple` and the records for a
 * serialiser. Members are placed by name; a member this script does not know goes to the reads
 * when public and to the maps when private (made protected, so every part sees it).
 *
 *   node scripts/split-memory-state.mjs [root]   # nothing to do when already split
 *
 * `node scripts/relayout.mjs` runs it too.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const FILE = 'src/store/memory-state.ts'
const PLACES = {
  maps: ['dropSessionIndexes', 'countExpiring', 'unlink', 'recount', 'withFingerprint'],
  checks: ['failedCheck', 'holds'],
  ops: ['write', 'apply'],
  state: ['records', 'lockTuple', 'loadLock', 'fromRecords', 'dump'],
}
const PARTS = {
  maps: {
    name: 'MemoryMaps',
    base: null,
    doc: '/** The maps a memory state keeps its records and indexes in, and the bookkeeping ops share. */',
  },
  checks: {
    name: 'MemoryChecks',
    base: 'maps',
    doc: "/** A memory state's checks: each guard of a write, evaluated on the maps. */",
  },
  ops: {
    name: 'MemoryOps',
    base: 'checks',
    doc: "/** A memory state's writes: a batch applied atomically when its checks hold, one op at a time. */",
  },
  reads: { name: 'MemoryReads', base: 'ops', doc: "/** A memory state's reads: each answers copies. */" },
}

const isComment = (line) => /^\s*(?:\/\*\*|\*|\/\/|\*\/)/.test(line)
const braces = (line) => {
  const code = line.replace(/'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|`(?:[^`\\]|\\.)*`/g, '""')
  return (code.match(/[{[(]/g) ?? []).length - (code.match(/[}\])]/g) ?? []).length
}

/**
 * Top-level pieces (imports, then declarations with their comments), or class members: a piece
 * starts on a line at `indent` outside any bracket, after one that had code.
 */
function segments(lines, indent) {
  const out = []
  let current = { lines: [], code: false }
  let depth = 0
  for (const line of lines) {
    const starts = line.length - line.trimStart().length === indent && !/^[\]})>]/.test(line.trim())
    if (depth === 0 && starts && line.trim() !== '' && current.code) {
      out.push(current)
      current = { lines: [], code: false }
    }
    current.lines.push(line)
    if (line.trim() !== '' && !isComment(line)) {
      current.code = true
      depth += braces(line)
    }
  }
  if (current.lines.some((line) => line.trim() !== '')) out.push(current)
  return out.map((segment) => {
    const first = segment.lines.find((line) => line.trim() !== '' && !isComment(line)) ?? ''
    const name =
      /^\s*(?:(?:private|protected|public|static|readonly|async|declare)\s+)*(?:get\s+|set\s+)?\*?\s*([A-Za-z_$][\w$]*)/.exec(
        first,
      )?.[1]
    const field =
      /^\s*(?:(?:private|protected|public|static|readonly|declare)\s+)*[A-Za-z_$][\w$]*\s*[?!]?\s*[:=]/.test(
        first,
      ) && !/^\s*[\w$\s]*\(/.test(first)
    return { text: segment.lines.join('\n'), first, name, field }
  })
}

/** `imports` without the names `body` never uses (a statement left empty goes). */
function usedImports(imports, body) {
  const kept = []
  for (const statement of imports) {
    const match = /^import\s+(type\s+)?\{([^}]*)\}\s*from\s*('[^']+')/.exec(statement.replace(/\s+/g, ' '))
    if (!match) {
      kept.push(statement)
      continue
    }
    const code = body.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '')
    const names = match[2]
      .split(',')
      .map((part) => part.trim())
      .filter(Boolean)
      .filter((spec) =>
        new RegExp(
          `\\b${spec
            .replace(/^type\s+/, '')
            .split(/\s+as\s+/)
            .pop()}\\b`,
        ).test(code),
      )
    if (names.length) kept.push(`import ${match[1] ?? ''}{ ${names.join(', ')} } from ${match[3]}`)
  }
  return kept
}

/** Splits `root`'s memory state when it is whole; answers the files written (none when already split). */
export function splitMemoryState(root) {
  const text = readFileSync(join(root, FILE), 'utf8')
  const classStart = text.search(/^export class MemoryState \{/m)
  if (classStart < 0) return []
  const before = text.slice(0, classStart)
  const afterOpen = text.slice(text.indexOf('{', classStart) + 1)
  const classEnd = afterOpen.search(/^\}/m)
  const body = afterOpen.slice(0, classEnd)
  const tail = afterOpen.slice(classEnd + 1)

  const top = segments(before.split('\n'), 0)
  const imports = top.filter((s) => /^\s*import\s/.test(s.first)).map((s) => s.text.trim())
  const declarations = top.filter((s) => !/^\s*import\s/.test(s.first))
  // The class's own comment is the last declaration piece without code.
  const kept = declarations.filter((s) => /StateRecords|LockTuple/.test(s.first))
  const classDoc = before.slice(before.lastIndexOf('/**'))
  const helpers = declarations.filter(
    (s) =>
      !/StateRecords|LockTuple/.test(s.first) && s.first.trim() !== '' && !classDoc.includes(s.text.trim()),
  )
  const helperNames = helpers
    .map((s) => /^(?:export\s+)?(?:const|let|function\*?|class)\s+([A-Za-z_$][\w$]*)/.exec(s.first)?.[1])
    .filter(Boolean)
  const exported = helpers.map((s) =>
    s.text.replace(/^(\s*(?:\/\*\*[\s\S]*?\*\/\s*)?)(?!export )(const|function|let|class)/, '$1export $2'),
  )

  const placed = { maps: [], checks: [], ops: [], reads: [], state: [] }
  for (const member of segments(body.split('\n'), 2)) {
    const known = Object.entries(PLACES).find(([, names]) => names.includes(member.name))?.[0]
    const place = member.field ? 'maps' : (known ?? (/^\s*private\s/.test(member.first) ? 'maps' : 'reads'))
    const protect =
      place !== 'state' && place !== 'reads'
        ? member.text.replace(/^(\s*)private /m, '$1protected ')
        : member.text
    placed[place].push({ text: protect.replace(/^\n+|\n+$/g, ''), field: member.field })
  }
  /** Members one after another: fields on consecutive lines, anything else a blank line apart. */
  const joinMembers = (members) =>
    members.map((m, i) => (i === 0 ? '' : m.field && members[i - 1].field ? '\n' : '\n\n') + m.text).join('')

  const inMemory = (statement) =>
    statement.replace(/from '\.\.\/([^']+)'/, "from '../../$1'").replace(/from '\.\/([^']+)'/, "from '../$1'")
  const written = []
  const write = (path, content) => {
    writeFileSync(join(root, path), content)
    written.push(path)
  }
  for (const [part, { name, base, doc }] of Object.entries(PARTS)) {
    const members = joinMembers(placed[part])
    const head = part === 'maps' ? `${exported.join('\n\n')}\n\n` : ''
    const classText = `${head}${doc}\nexport class ${name}${base ? ` extends ${PARTS[base].name}` : ''} {\n${members}\n}\n`
    const own = [
      ...imports.map(inMemory),
      ...(base ? [`import { ${PARTS[base].name} } from './${base}.js'`] : []),
      ...(part !== 'maps' && helperNames.length
        ? [`import { ${helperNames.join(', ')} } from './maps.js'`]
        : []),
    ]
    write(`src/store/memory/${part}.ts`, `${usedImports(own, classText).join('\n')}\n\n${classText}`)
  }
  const stateClass = `${classDoc}export class MemoryState extends MemoryReads {\n${joinMembers(placed.state)}\n}${tail}`
  const stateText = `${kept.map((s) => s.text.trim()).join('\n\n')}\n\n${stateClass}`
  const stateImports = usedImports(
    [
      ...imports,
      ...(helperNames.length ? [`import { ${helperNames.join(', ')} } from './memory/maps.js'`] : []),
      "import { MemoryReads } from './memory/reads.js'",
    ],
    stateText,
  )
  write(FILE, `${stateImports.join('\n')}\n\n${stateText}`)
  return written
}

const self = fileURLToPath(import.meta.url)
if (process.argv[1] === self) {
  const root = process.argv[2] ?? join(self, '..', '..')
  const written = splitMemoryState(root)
  console.log(
    written.length ? `split-memory-state: wrote ${written.join(', ')}` : 'split-memory-state: already split',
  )
}
