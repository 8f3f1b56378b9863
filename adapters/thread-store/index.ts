import type { Store, StoreErrorCode, StoreMethod } from '../../src/store/index.js'
import { STORE_METHOD_NAMES, StoreError } from '../../src/store/index.js'

/**
 * A store held by another thread of the process, reached by messages: every call of the contract
 * is posted as plain data (`StoreCall`) to the thread that holds the store, which answers it there
 * (`answerStoreCall`) and posts the answer back (`StoreReply`); `postMessage` copies both ways, so
 * what a caller gets is its own copy, as the contract asks. What `tokenvault serve` gives its heavy
 * lane on a memory store: the lane's decryption, parsing, filters and answers happen on its own
 * thread and heap, and the store's maps stay on the main thread, the one copy of the vault's data.
 */

/** One call of the contract, posted to the thread that holds the store. */
export interface StoreCall {
  id: number
  method: StoreMethod
  args: unknown[]
}

/** How an error ended a call, as plain data: a `StoreError`'s code is kept, any other is a message. */
export interface CallError {
  message: string
  code?: StoreErrorCode
  retryAfter?: number
}

/** The answer to a `StoreCall`: what the method answered, or how it failed. */
export type StoreReply = { id: number; result: unknown } | { id: number; error: CallError }

/** `error` as plain data that a `postMessage` copies (`thrownAgain` makes it an error again). */
export function callError(error: unknown): CallError {
  const e = error as { message?: unknown }
  const message = typeof e?.message === 'string' ? e.message : String(error)
  if (!(error instanceof StoreError)) return { message }
  return {
    message,
    code: error.code,
    ...(error.retryAfter === undefined ? {} : { retryAfter: error.retryAfter }),
  }
}

/** The error `callError` described: a `StoreError` of its code when it had one. */
export function thrownAgain({ message, code, retryAfter }: CallError): Error {
  if (code === undefined) return new Error(message)
  return new StoreError(code, message, retryAfter === undefined ? {} : { retryAfter })
}

const isMethod = (name: unknown): name is StoreMethod =>
  typeof name === 'string' && (STORE_METHOD_NAMES as string[]).includes(name)

/**
 * Answers `calls` (one message's) with `store`, together once each is answered: meant for a store
 * whose calls answer at once (the memory store), since the first waits for the last.
 */
export function answerStoreCalls(store: Store, calls: readonly StoreCall[]): Promise<StoreReply[]> {
  return Promise.all(calls.map((call) => answerStoreCall(store, call)))
}

/**
 * Answers `call` with `store`, on the thread that holds it. `close` is refused: the store belongs
 * to this thread, which closes it when it is done; a caller on another thread only stops calling.
 */
export async function answerStoreCall(store: Store, call: StoreCall): Promise<StoreReply> {
  try {
    if (!isMethod(call.method) || call.method === 'close' || !Array.isArray(call.args))
      throw new Error(`thread store: no such call: ${String(call.method)}`)
    const method = store[call.method] as (...args: unknown[]) => Promise<unknown>
    return { id: call.id, result: await method.apply(store, call.args) }
  } catch (error) {
    return { id: call.id, error: callError(error) }
  }
}

/** A store over the thread that holds one (`storeOverThread`), and where that thread's answers go. */
export interface ThreadStore {
  store: Store
  /** Settles the calls `replies` answer (a reply to no call in flight is ignored). */
  settle(replies: readonly StoreReply[]): void
  /** Fails every call in flight and every later call with `error` (the other thread is gone). */
  fail(error: Error): void
}

/**
 * A store whose every call `send` posts to the thread that holds the real one; that thread's
 * replies come back through `settle`. The calls made in one turn of this thread's event loop go in
 * one message (the concurrent requests of a heavy key make theirs together: a message each way
 * costs both threads, and the holding thread is the one other keys wait for). `close` ends this
 * side only: later calls fail `closed`. Not `persistent`: what it serves is a memory store.
 */
export function storeOverThread(send: (calls: StoreCall[]) => void): ThreadStore {
  const waiting = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>()
  let next = 1
  let failed: Error | undefined
  let queued: StoreCall[] = []
  const flush = () => {
    const calls = queued
    queued = []
    if (calls.length) send(calls)
  }
  const call = (method: StoreMethod, args: unknown[]) =>
    new Promise<unknown>((resolve, reject) => {
      if (failed) return reject(failed)
      const id = next++
      waiting.set(id, { resolve, reject })
      if (!queued.length) setImmediate(flush)
      queued.push({ id, method, args })
    })
  const fail = (error: Error) => {
    failed = error
    queued = []
    for (const { reject } of waiting.values()) reject(error)
    waiting.clear()
  }
  const methods: Partial<Record<StoreMethod, unknown>> = {}
  for (const name of STORE_METHOD_NAMES) methods[name] = (...args: unknown[]) => call(name, args)
  methods.close = async () => fail(new StoreError('closed', 'thread store: the store is closed'))
  const store = methods as Store
  const settle = (replies: readonly StoreReply[]) => {
    for (const reply of replies) {
      const at = waiting.get(reply.id)
      if (!at) continue
      waiting.delete(reply.id)
      if ('error' in reply) at.reject(thrownAgain(reply.error))
      else at.resolve(reply.result)
    }
  }
  return { store, settle, fail }
}
