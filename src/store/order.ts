/**
 * Orders and name filters that every store answers alike: the memory state sorts and filters with
 * these, and the SQL store builds its `LIKE` patterns here instead of restating the rule.
 */

/** A comparator ordering by a string key with `<` (UTF-16 code units, as JavaScript compares). */
export const byKey =
  <T>(key: (t: T) => string) =>
  (a: T, b: T): number => {
    const x = key(a)
    const y = key(b)
    return x < y ? -1 : x > y ? 1 : 0
  }

/** Turns a `name` filter into a predicate: `*` is a wildcard, no `*` means "contains"; case-insensitive. */
export function nameMatcher(filter: string | undefined): (name: string) => boolean {
  if (filter === undefined || filter === '') return () => true
  const lower = filter.toLowerCase()
  if (!lower.includes('*')) return (name) => name.toLowerCase().includes(lower)
  const source = lower
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*')
  const pattern = new RegExp(`^${source}$`, 's')
  return (name) => pattern.test(name.toLowerCase())
}

/**
 * The `LIKE` pattern (escape character `\`) that matches a lower-cased name exactly when
 * `nameMatcher(filter)` matches the name: `*` matches any run of characters, and a filter without
 * `*` matches names that contain it. `null` when the filter matches every name.
 */
export function likePattern(filter: string | undefined): string | null {
  if (filter === undefined || filter === '') return null
  const literal = (part: string) => part.replace(/[\\%_]/g, '\\$&')
  const lower = filter.toLowerCase()
  if (!lower.includes('*')) return `%${literal(lower)}%`
  return lower.split('*').map(literal).join('%')
}
