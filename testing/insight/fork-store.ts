import { modelReads } from '../../adapters/memory/model-reads.js'
import { MemoryState } from '../../adapters/memory/state.js'
import type { Store } from '../../src/store/index.js'
import { StoreError } from '../../src/store/index.js'

/** A state and how many stores read it: the first of them to write copies it first. */
interface Shared {
  state: MemoryState
  refs: number
}

/** A container a plain object may hold: a map, a set, or a class instance (records hold none of them). */
const isContainer = (v: unknown) =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date) && !isPlain(v)

function isPlain(v: object): boolean {
  const proto = Object.getPrototypeOf(v)
  return proto === Object.prototype || proto === null
}

/**
 * A copy of a memory state's containers (its maps, sets, arrays and the class instances holding
 * them), sharing the records themselves: a record is never changed in place (a write puts a new
 * one), so both copies may hold it. A plain object is a record unless it holds a map, a set or a
 * class instance directly. Weak maps are shared (keyed by shared records, and never iterated).
 */
export function cloneStructure<T>(value: T): T {
  if (typeof value !== 'object' || value === null) {
    if (typeof value === 'function') throw new TypeError('fork: a memory state holds a function field')
    return value
  }
  if (value instanceof WeakMap || value instanceof WeakSet || value instanceof Date) return value
  if (Array.isArray(value)) return value.map(cloneStructure) as T
  if (value instanceof Map) {
    const out = new Map()
    for (const [k, v] of value) out.set(k, cloneStructure(v))
    return out as T
  }
  if (value instanceof Set) return new Set(value) as T
  if (isPlain(value) && !Object.values(value).some(isContainer)) return value
  const out = Object.create(Object.getPrototypeOf(value)) as Record<string, unknown>
  for (const key of Object.keys(value)) out[key] = cloneStructure((value as Record<string, unknown>)[key])
  return out as T
}

/** A memory store that can fork: see `forkableMemoryStore`. */
export interface ForkableStore extends Store {
  /**
   * A new store holding this one's state as it is now, in time independent of what it holds: both
   * read the one state until either writes, which first copies it (its containers; records shared).
   * Neither store's later writes reach the other.
   */
  fork(): ForkableStore
}

/**
 * The memory store of the test vault, able to `fork()`: the same state, the same promises (it is a
 * `MemoryState` behind async methods, as `memoryStore()` is), plus copy-on-write sharing of the
 * whole state between forks.
 */
export function forkableMemoryStore(from?: Shared): ForkableStore {
  let shared: Shared = from ?? { state: new MemoryState(), refs: 1 }
  let closed = false
  const read = () => {
    if (closed) throw new StoreError('closed', 'memoryStore: the store is closed')
    return shared.state
  }
  /** The state to write: this store's own, copied first while another store shares it. */
  const own = () => {
    const state = read()
    if (shared.refs === 1) return state
    shared.refs--
    shared = { state: cloneStructure(state), refs: 1 }
    return shared.state
  }
  return {
    write: async (batch) => own().write(batch),
    ...modelReads(read),
    close: async () => {
      if (!closed) shared.refs--
      closed = true
    },
    fork: () => {
      shared.refs++
      return forkableMemoryStore(shared)
    },
  }
}
