/**
 * A small router over path patterns like `/tokens/:id/children`. Literal segments win over
 * parameters; a parameter matches one non-empty segment, percent-decoded.
 */

interface Node<R> {
  literal: Map<string, Node<R>>
  param: Node<R> | undefined
  /** Route by method, for a pattern ending here. */
  methods: Map<string, R> | undefined
  /** The `Allow` header value for this pattern. */
  allow: string
}

/** The outcome of `Router.match`. */
export type Match<R> =
  | { kind: 'found'; route: R; params: string[] }
  | { kind: 'method'; allow: string }
  | { kind: 'none' }
  | { kind: 'bad-encoding' }

const node = <R>(): Node<R> => ({ literal: new Map(), param: undefined, methods: undefined, allow: '' })

/** Routes requests by method and path. Build it once; `match` allocates only the params array. */
export class Router<R> {
  private readonly root: Node<R> = node()

  /** Adds a route for `method` on `pattern` (`:name` segments are parameters, in order). */
  add(method: string, pattern: string, route: R): this {
    let at = this.root
    for (const segment of pattern.split('/').slice(1)) {
      if (segment.startsWith(':')) at = at.param ??= node()
      else {
        let next = at.literal.get(segment)
        if (!next) {
          next = node()
          at.literal.set(segment, next)
        }
        at = next
      }
    }
    at.methods ??= new Map()
    at.methods.set(method, route)
    at.allow = [...at.methods.keys()].sort().join(', ')
    return this
  }

  /**
   * Finds the route of `method` on `path` (no query; one trailing slash is ignored). A known path
   * with another method gives `method` with the `Allow` value; `%` escapes that do not decode give
   * `bad-encoding`.
   */
  match(method: string, path: string): Match<R> {
    if (path.length > 1 && path.charCodeAt(path.length - 1) === 47) path = path.slice(0, -1)
    const segments = path.split('/')
    if (segments[0] !== '') return { kind: 'none' }
    const params: string[] = []
    const other: { node?: Node<R> } = {}
    const found = walk(this.root, segments, 1, params, method, other)
    if (found === null) return other.node ? { kind: 'method', allow: other.node.allow } : { kind: 'none' }
    const route = found.methods!.get(method)!
    for (let i = 0; i < params.length; i++) {
      const decoded = decodedSegment(params[i]!)
      if (decoded === null) return { kind: 'bad-encoding' }
      params[i] = decoded
    }
    return { kind: 'found', route, params }
  }
}

/** A path segment percent-decoded, or null when its encoding is malformed (`%ZZ`, a lone `%`, bytes not UTF-8). */
export function decodedSegment(raw: string): string | null {
  if (!raw.includes('%')) return raw
  try {
    return decodeURIComponent(raw)
  } catch {
    return null
  }
}

/**
 * The node of `segments` from `i` whose methods hold `method`, literal segments first; a parameter
 * takes a segment a literal has too when the literal's routes lack the method (`POST /tokens/search`
 * beside `GET /tokens/:id`). With no node holding the method, the first node found with any route
 * (for 405 and its `Allow`), its params left as they were.
 */
function walk<R>(
  at: Node<R>,
  segments: string[],
  i: number,
  params: string[],
  method: string,
  other: { node?: Node<R> },
): Node<R> | null {
  if (i === segments.length) {
    if (!at.methods) return null
    if (at.methods.has(method)) return at
    other.node ??= at
    return null
  }
  const segment = segments[i]!
  const literal = at.literal.get(segment)
  if (literal) {
    const found = walk(literal, segments, i + 1, params, method, other)
    if (found) return found
  }
  if (at.param && segment !== '') {
    params.push(segment)
    const found = walk(at.param, segments, i + 1, params, method, other)
    if (found) return found
    params.pop()
  }
  return null
}
