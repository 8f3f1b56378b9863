/** A parsed query string: a key once is a string, repeated (or written `key[]`) an array of strings. */
export type Query = Record<string, string | string[]>

/**
 * Parses a query string (without the `?`) the way list filters are sent: `type=a&type=b` and
 * `type[]=a` both give `type: [...]`; `page=2` gives `page: '2'`. Values stay strings: the service
 * parses them. The object has no prototype, so no key can reach `Object.prototype`.
 */
export function parseQuery(search: string): Query {
  const out: Query = Object.create(null)
  if (search === '') return out
  for (const [rawKey, value] of new URLSearchParams(search)) {
    const list = rawKey.endsWith('[]')
    const key = list ? rawKey.slice(0, -2) : rawKey
    const seen = out[key]
    if (seen === undefined) out[key] = list ? [value] : value
    else if (Array.isArray(seen)) seen.push(value)
    else out[key] = [seen, value]
  }
  return out
}
