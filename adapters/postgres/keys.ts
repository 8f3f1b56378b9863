import { createHash, hash } from 'node:crypto'
import type { QueryConfig } from 'pg'

/**
 * A byte string that sorts (as `bytea`, byte by byte) exactly like the JavaScript string
 * `parts.join('\u0000')` sorts with `<`: the parts joined by U+0000 and encoded as UTF-16BE, so that
 * comparing bytes compares UTF-16 code units, as JavaScript does. SQL text collations (even "C",
 * which compares code points) order some characters differently, hence this key for paged lists.
 */
export function sortKey(...parts: string[]): Buffer {
  return Buffer.from(parts.join('\u0000'), 'utf16le').swap16()
}

export { likePattern } from '../../src/store/index.js'

/** `name` quoted as an SQL identifier. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`
}

/** `text` as an SQL string literal (standard strings: each `'` doubled, backslashes as they are). */
export function quoteLiteral(text: string): string {
  return `'${text.replace(/'/g, "''")}'`
}

/** A signed 64-bit advisory-lock key (as a decimal string) derived from `name`. */
export function lockKey(name: string): string {
  return lockKeyValue(name).toString()
}

/** `lockKey` as a bigint. */
export function lockKeyValue(name: string): bigint {
  return hash('sha256', name, 'buffer').readBigInt64BE(0)
}

/**
 * Per statement text, its name (short and stable: `tv_` and a hash of the text) and the text: the
 * prototype of every call of it (`prepared`), kept, as the store sends its few texts on every call.
 */
const statementsByText = new Map<string, { readonly name: string; readonly text: string }>()

/**
 * A call of the prepared statement `text` with `values`: `{ name, text, values }`, its name and
 * text inherited from one object kept per text, `values` its only own property. `pg` copies every
 * call's config by its own properties' descriptors before sending it (keeping its prototype), a
 * slow path of the engine: 1.2 µs for three properties, 0.55 µs for one (and several times that
 * when the call runs cold, as a caller's lone create does while the database works). A spread of
 * it keeps only `values`: copy its fields by name.
 */
export function prepared(text: string, values: unknown[]): QueryConfig {
  let statement = statementsByText.get(text)
  if (statement === undefined) {
    if (statementsByText.size >= 10_000) statementsByText.clear()
    statement = Object.freeze({
      name: `tv_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`,
      text,
    })
    statementsByText.set(text, statement)
  }
  const call = Object.create(statement) as QueryConfig
  call.values = values
  return call
}
