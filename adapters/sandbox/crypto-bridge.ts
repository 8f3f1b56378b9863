import { createHash, createHmac, type Hash, type Hmac, randomBytes } from 'node:crypto'
import type { QuickJSContext, QuickJSHandle } from 'quickjs-emscripten-core'
import { GuestTextError, guestString } from './guest-text.js'

/** Digest algorithms formula code may use, plain or as HMAC (the names `node:crypto` takes). */
export const DIGESTS: ReadonlySet<string> = new Set(['sha1', 'sha256', 'sha384', 'sha512', 'md5'])
/** Digests and HMACs one run may have open at once. */
const MAX_OPEN = 1000
/** Most random bytes one call answers (as Node's `randomBytes` in a formula has always allowed). */
const MAX_RANDOM = 65_536

/** What the bridge knows of the run it serves; the engine owns it. */
export interface BridgeRun {
  /** When the run must end (`performance.now()` terms): a call past it fails. */
  deadline: number
  /** Set once the run is over: every later call fails. */
  ended: boolean
  /** Longest input of one call, in bytes (the run's memory budget). */
  maxInputBytes: number
  /** The run's open digests and HMACs, by id. */
  hashes: Map<number, Hash | Hmac>
  nextHash: number
}

/** A new run's bridge state. */
export function bridgeRun(deadline: number, maxInputBytes: number): BridgeRun {
  return { deadline, ended: false, maxInputBytes, hashes: new Map(), nextHash: 0 }
}

/** Ends a run's bridge: its open digests are dropped, and every later call fails. */
export function endBridge(run: BridgeRun): void {
  run.ended = true
  run.hashes.clear()
}

class BridgeError extends Error {}

/** The error of an input past the run's memory budget. */
const tooLarge = (run: BridgeRun, what: string) =>
  new BridgeError(`${what} is larger than the run's memory (${run.maxInputBytes} bytes)`)

/** The guest string `handle` copied whole, or a `BridgeError`: never a part of it, never `''` for it. */
function copied(context: QuickJSContext, run: BridgeRun, handle: QuickJSHandle, what: string): string {
  try {
    return guestString(context, handle, what, run.maxInputBytes)
  } catch (error) {
    if (!(error instanceof GuestTextError)) throw error
    throw error.message.includes('longer than') ? tooLarge(run, what) : new BridgeError(error.message)
  }
}

/**
 * Hands `use` a string or `ArrayBuffer` argument within the size limit, as Node takes it (bytes as
 * a view of the engine's memory, valid only during the call).
 */
function withBytes(
  context: QuickJSContext,
  run: BridgeRun,
  handle: QuickJSHandle | undefined,
  what: string,
  use: (data: string | Uint8Array) => void,
): void {
  if (!handle) throw new BridgeError(`${what} must be a string or bytes`)
  const type = context.typeof(handle)
  if (type === 'string') {
    // Each UTF-16 unit is at least one UTF-8 byte: a longer string is refused before it is copied.
    const text = copied(context, run, handle, what)
    // A UTF-8 byte never stands for more than one UTF-16 unit: this bounds the encoded size.
    if (text.length * 3 > run.maxInputBytes && Buffer.byteLength(text) > run.maxInputBytes)
      throw tooLarge(run, what)
    use(text)
    return
  }
  if (type !== 'object') throw new BridgeError(`${what} must be a string or bytes`)
  let lifetime: ReturnType<QuickJSContext['getArrayBuffer']>
  try {
    lifetime = context.getArrayBuffer(handle)
  } catch {
    throw new BridgeError(`${what} must be a string or bytes`)
  }
  try {
    if (lifetime.value.length > run.maxInputBytes) throw tooLarge(run, what)
    use(lifetime.value)
  } finally {
    lifetime.dispose()
  }
}

/** The id of one of the run's open digests, or a `BridgeError`. */
function idOf(context: QuickJSContext, run: BridgeRun, handle: QuickJSHandle | undefined): number {
  const id = handle && context.typeof(handle) === 'number' ? context.getNumber(handle) : Number.NaN
  if (!run.hashes.has(id)) throw new BridgeError('no such digest (already digested?)')
  return id
}

/** `hashNew(algorithm, key?)`: a new digest, or an HMAC when `key` is given; answers its id. */
function hashNew(context: QuickJSContext, run: BridgeRun, algorithm?: QuickJSHandle, key?: QuickJSHandle) {
  const name =
    algorithm && context.typeof(algorithm) === 'string' ? copied(context, run, algorithm, 'algorithm') : ''
  if (!DIGESTS.has(name))
    throw new BridgeError(`Digest method not supported (formulas have ${[...DIGESTS].join(', ')})`)
  if (run.hashes.size >= MAX_OPEN) throw new BridgeError(`a run has at most ${MAX_OPEN} open digests`)
  const hasKey = key !== undefined && context.typeof(key) !== 'undefined'
  let hash: Hash | Hmac | undefined
  // The key is copied by createHmac before its bytes are freed.
  if (hasKey) withBytes(context, run, key, 'key', (data) => (hash = createHmac(name, data)))
  else hash = createHash(name)
  if (!hash) throw new BridgeError('key must be a string or bytes')
  const id = ++run.nextHash
  run.hashes.set(id, hash)
  return context.newNumber(id)
}

/** The bridge's four functions, each checking its arguments (see `installCryptoBridge`). */
function cryptoFunctions(
  context: QuickJSContext,
  run: BridgeRun,
): Record<string, (...args: QuickJSHandle[]) => QuickJSHandle | undefined> {
  return {
    hashNew: (algorithm, key) => hashNew(context, run, algorithm, key),
    hashUpdate: (id, data) => {
      const hash = run.hashes.get(idOf(context, run, id))!
      withBytes(context, run, data, 'data', (input) => {
        if (typeof input === 'string') hash.update(input, 'utf8')
        else hash.update(input)
      })
      return undefined
    },
    hashDigest: (id) => {
      const key = idOf(context, run, id)
      const hash = run.hashes.get(key)!
      run.hashes.delete(key)
      return context.newArrayBuffer(new Uint8Array(hash.digest()).buffer)
    },
    random: (n) => {
      const size = n && context.typeof(n) === 'number' ? context.getNumber(n) : -1
      if (!Number.isInteger(size) || size < 0 || size > MAX_RANDOM)
        throw new BridgeError(`size must be an integer from 0 to ${MAX_RANDOM}`)
      return context.newArrayBuffer(new Uint8Array(randomBytes(size)).buffer)
    },
  }
}

/**
 * The host's crypto for formula code: four functions, set on `target` (an object of the run's
 * context the prelude takes them from and then deletes), that hand `node:crypto` bytes and answer
 * bytes. Nothing of the host's is handed back: ids are numbers, digests and random bytes new
 * `ArrayBuffer`s made in the engine. Every argument is checked here whatever the prelude did
 * (type, algorithm in `DIGESTS`, size within the run's memory budget), and every call fails once
 * the run is past its deadline or over. A string is taken only when it is copied whole: one the
 * engine can't copy (out of memory), or that the copy would change (a NUL, a lone surrogate), is an
 * error thrown into the formula, never hashed as `''` or as a part of it.
 *
 * - `hashNew(algorithm, key?)` → id: a digest, or an HMAC when `key` (string or `ArrayBuffer`) is given;
 * - `hashUpdate(id, data)`: `data` a string (hashed as UTF-8) or an `ArrayBuffer`;
 * - `hashDigest(id)` → `ArrayBuffer` (the id is spent);
 * - `random(n)` → `ArrayBuffer` of `n` random bytes (an integer from 0 to 65536).
 */
export function installCryptoBridge(context: QuickJSContext, target: QuickJSHandle, run: BridgeRun): void {
  const guard = (call: () => QuickJSHandle | undefined) => {
    try {
      if (run.ended) throw new BridgeError('the run has ended')
      if (performance.now() > run.deadline) throw new BridgeError('the run is out of time')
      return call()
    } catch (error) {
      const message = error instanceof BridgeError ? error.message : 'the crypto call failed'
      return { error: context.newError(message) }
    }
  }
  for (const [name, fn] of Object.entries(cryptoFunctions(context, run))) {
    const handle = context.newFunction(name, (...args) => guard(() => fn(...args)))
    context.setProp(target, name, handle)
    handle.dispose()
  }
}
