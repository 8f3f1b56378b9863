import type { Json } from '../kernel/index.js'

/** Work units each node a JSON Path visits costs (see `MAX_EXPRESSION_WORK` in src/kernel/budget.ts). */
export const NODE_COST = 32

/** Work units each character of a JSON Path costs: it is parsed in script, a step at a time. */
const PATH_CHAR_COST = 32

/** How deep a recursive descent (`..`) looks; token data nests at most 64 levels. */
const MAX_DESCENT_DEPTH = 64

/** What a JSON Path step needs from the evaluation running it: a budget and a way to fail. */
export interface PathContext {
  /** Spends work units; throws past the budget (before more nodes are gathered). */
  charge(units: number): void
  /** Throws the evaluation's failure with `message`. */
  fail(message: string): never
}

const children = (n: Json): Json[] =>
  n !== null && typeof n === 'object' ? (Array.isArray(n) ? n : Object.values(n)) : []

/** `n` and every node under it, in document order; each node is charged as it is gathered. */
function descend(n: Json, out: Json[], ctx: PathContext): void {
  const stack: [Json, number][] = [[n, 0]]
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!
    ctx.charge(NODE_COST)
    out.push(node)
    if (depth >= MAX_DESCENT_DEPTH) continue
    const kids = children(node)
    for (let i = kids.length - 1; i >= 0; i--) stack.push([kids[i]!, depth + 1])
  }
}

function member(n: Json, key: string | number): Json[] {
  if (Array.isArray(n)) return typeof key === 'number' && key < n.length ? [n[key]!] : []
  if (n !== null && typeof n === 'object' && Object.hasOwn(n, String(key))) return [n[String(key)]!]
  return []
}

/** A filter `@.path <op> literal`, parsed once for every node it is asked about. */
function compileFilter(expr: string, ctx: PathContext): (node: Json) => boolean {
  // `(.+)` then a trim, not `(.+?)\s*$`: a lazy match before trailing space backtracks over every
  // space of a long value (time quadratic in it).
  const m = /^\s*@((?:\.[A-Za-z0-9_-]+)*)\s*(==|!=|<=|>=|<|>)\s*(\S.*)$/.exec(expr)
  if (!m) return ctx.fail(`json filter "${expr.slice(0, 40)}" is not of the form @.name <op> value`)
  const keys = m[1]!.split('.').slice(1)
  const op = m[2]!
  const raw = m[3]!.trimEnd()
  const right: Json = /^'.*'$|^".*"$/.test(raw) ? raw.slice(1, -1) : raw === 'null' ? null : Number(raw)
  if (typeof right === 'number' && Number.isNaN(right))
    ctx.fail(`json filter value "${raw}" is not a literal`)
  return (node) => {
    let v: Json | undefined = node
    for (const key of keys) {
      v =
        v !== null && typeof v === 'object' && !Array.isArray(v) && Object.hasOwn(v, key) ? v[key] : undefined
    }
    if (v === undefined) return false
    if (op === '==') return v === right
    if (op === '!=') return v !== right
    if (typeof v !== typeof right || (typeof v !== 'number' && typeof v !== 'string')) return false
    const [a, b] = [v as number | string, right as number | string]
    return op === '<' ? a < b : op === '<=' ? a <= b : op === '>' ? a > b : a >= b
  }
}

/**
 * The nodes `path` selects in `input`: `$`, `.name`, `['name']`, `[n]`, `[*]`, `.*`, `..name`,
 * `..*`, `[?(@.path <op> literal)]`. Every node a step gathers is charged `NODE_COST` before the
 * next is gathered, so `$..*..*..*` over deep data stops at the budget instead of growing tenfold
 * per step.
 */
export function jsonPath(input: Json, path: string, ctx: PathContext): Json[] {
  if (!path.startsWith('$')) ctx.fail('json needs a JSON Path starting with $')
  // The path is read in script, a step at a time: each character is charged as one handled so.
  ctx.charge(PATH_CHAR_COST * path.length)
  let nodes: Json[] = [input]
  let pos = 1
  const step = (f: (n: Json) => Json[]) => {
    const out: Json[] = []
    for (const n of nodes) {
      const found = f(n)
      ctx.charge(NODE_COST * found.length)
      for (const x of found) out.push(x)
    }
    nodes = out
  }
  while (pos < path.length) {
    let recursive = false
    if (path.startsWith('..', pos)) {
      recursive = true
      pos += 2
      const all: Json[] = []
      for (const n of nodes) descend(n, all, ctx)
      nodes = all
    } else if (path[pos] === '.') pos++
    if (path[pos] === '[') {
      const end = path.indexOf(']', pos)
      if (end < 0) ctx.fail('json has a "[" without its "]"')
      let inner = path.slice(pos + 1, end)
      if (inner.startsWith('?(')) {
        // A filter may hold "]" only inside quotes; keep it simple: up to the matching ")]".
        const close = path.indexOf(')]', pos)
        if (close < 0) ctx.fail('json has a filter without its ")]"')
        inner = path.slice(pos + 1, close + 1)
        const holds = compileFilter(inner.slice(2, -1), ctx)
        step((n) => {
          const kids = children(n)
          ctx.charge(NODE_COST * kids.length)
          return kids.filter(holds)
        })
        pos = close + 2
        continue
      }
      pos = end + 1
      if (inner === '*') step(children)
      else if (/^\d+$/.test(inner)) step((n) => member(n, Number(inner)))
      else if (/^'.*'$|^".*"$/.test(inner)) step((n) => member(n, inner.slice(1, -1)))
      else ctx.fail(`json does not support "[${inner}]"`)
      continue
    }
    const m = /^[A-Za-z0-9_-]+|^\*/.exec(path.slice(pos))
    if (!m) ctx.fail(`json can't read the path at "${path.slice(pos, pos + 20)}"`)
    const name = m![0]
    pos += name.length
    step(name === '*' ? children : (n) => member(n, name))
    if (recursive) nodes = nodes.filter((n) => n !== undefined)
  }
  return nodes
}
