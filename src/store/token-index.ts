import type { StoredToken } from '../kernel/index.js'
import type { TokenTerm } from './contract.js'
import { SortedIds } from './sorted-ids.js'

/** The index key of a term (metadata as JSON, so no key or value can run into another). */
export function termKey(term: TokenTerm): string {
  return term.kind === 'metadata'
    ? `metadata\u0000${JSON.stringify([term.key, term.value])}`
    : `${term.kind}\u0000${term.value}`
}

/** Every index key a token carries (see `TokenTerm`; `id` is answered from the id order itself). */
export function termKeysOf(
  token: Pick<StoredToken, 'type' | 'fingerprint' | 'containers' | 'metadata' | 'search_index_hashes'>,
): Set<string> {
  const keys = new Set<string>()
  keys.add(termKey({ kind: 'type', value: token.type }))
  if (token.fingerprint !== undefined) keys.add(termKey({ kind: 'fingerprint', value: token.fingerprint }))
  for (const c of token.containers) keys.add(termKey({ kind: 'container', value: c }))
  for (const key of Object.keys(token.metadata)) {
    const value = token.metadata[key]
    if (typeof value === 'string') keys.add(termKey({ kind: 'metadata', key, value: value.toLowerCase() }))
  }
  for (const hash of token.search_index_hashes ?? []) keys.add(termKey({ kind: 'search_index', value: hash }))
  return keys
}

/**
 * The memory state's token indexes, per tenant: every id in order, and the ids carrying each
 * term, in order (sorted in-heap sets kept on every token put and delete). A keyset read costs a
 * binary search and what it answers.
 */
export class TokenIndex {
  private readonly all = new Map<string, SortedIds>()
  private readonly terms = new Map<string, Map<string, SortedIds>>()

  /** Indexes `next` in place of `old` (either may be absent). */
  update(tenantId: string, id: string, old: StoredToken | undefined, next: StoredToken | undefined): void {
    const was = old ? termKeysOf(old) : new Set<string>()
    const is = next ? termKeysOf(next) : new Set<string>()
    let terms = this.terms.get(tenantId)
    for (const key of was) {
      if (is.has(key)) continue
      const ids = terms?.get(key)
      ids?.delete(id)
      if (ids?.size === 0) terms!.delete(key)
    }
    for (const key of is) {
      if (was.has(key)) continue
      if (!terms) {
        terms = new Map()
        this.terms.set(tenantId, terms)
      }
      let ids = terms.get(key)
      if (!ids) {
        ids = new SortedIds()
        terms.set(key, ids)
      }
      ids.add(id)
    }
    if (terms?.size === 0) this.terms.delete(tenantId)
    if (next && !old) {
      let ids = this.all.get(tenantId)
      if (!ids) {
        ids = new SortedIds()
        this.all.set(tenantId, ids)
      }
      ids.add(id)
    } else if (old && !next) {
      const ids = this.all.get(tenantId)
      ids?.delete(id)
      if (ids?.size === 0) this.all.delete(tenantId)
    }
  }

  /** Every id of the tenant, in order (empty when it has none). */
  ids(tenantId: string): SortedIds {
    return this.all.get(tenantId) ?? EMPTY
  }

  /** The ids carrying `term` (every id without one), in order. */
  withTerm(tenantId: string, term: TokenTerm | undefined): SortedIds {
    if (term === undefined) return this.ids(tenantId)
    return this.terms.get(tenantId)?.get(termKey(term)) ?? EMPTY
  }
}

const EMPTY = new SortedIds()
