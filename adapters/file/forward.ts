import type { Check, Op, WriteBatch, WriteResult } from '../../src/store/index.js'
import { type CallError, callError, thrownAgain } from '../thread-store/index.js'
import { tokenRecords } from './token-codec.js'

/**
 * A write that a thread of the process hands to the thread that commits for it (the file store
 * opened with `commitsOn`), as plain data a `postMessage` copies: its token puts already encoded as
 * their records (`tokenRecords`), made on the thread that wrote them, with each such token's `data`
 * left out, so the committing thread neither encodes a large value nor receives it as a string.
 * LMDB has one write lock per file: a thread committing for itself held it until its own event loop
 * ran the commit's callback, and the other thread's commits waited for that thread's work.
 */
export interface ForwardedWrite {
  checks: Check[]
  ops: Op[]
  records: (Uint8Array | undefined)[] | null
  deferSync?: boolean
}

/** How a forwarded write ended, as plain data: its result, or its error's code and message. */
export type ForwardedResult = { result: WriteResult } | { error: CallError }

/** Sends a forwarded write to the committing thread (with the buffers to move there, not copy) and answers how it ended. */
export type CommitsOn = (write: ForwardedWrite, transfer: ArrayBuffer[]) => Promise<ForwardedResult>

/**
 * `bytes` in an `ArrayBuffer` of their own, which `postMessage` can move to another thread whole (a
 * pooled buffer, or a slice of a larger one, can't be): as they are when they fill one already, else
 * copied.
 */
export function movable(bytes: Uint8Array): Uint8Array {
  const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
  return whole && bytes.buffer instanceof ArrayBuffer ? bytes : new Uint8Array(bytes)
}

/** `batch` as the committing thread takes it, and the buffers to move with it. */
export function forwardedWrite(batch: WriteBatch): { write: ForwardedWrite; transfer: ArrayBuffer[] } {
  const encoded = tokenRecords(batch.ops)
  const records = encoded?.map((r) => (r ? movable(r) : undefined)) ?? null
  const ops = batch.ops.map((op, i) =>
    records?.[i] && op.op === 'token.put' ? { ...op, token: { ...op.token, data: null } } : op,
  )
  const write: ForwardedWrite = {
    checks: batch.checks ?? [],
    ops,
    records,
    ...(batch.deferSync ? { deferSync: true } : {}),
  }
  const transfer = (records ?? []).flatMap((r) => (r ? [r.buffer as ArrayBuffer] : []))
  return { write, transfer }
}

/** How a write ended, to send back to the thread that forwarded it. */
export async function forwardedResult(done: Promise<WriteResult>): Promise<ForwardedResult> {
  try {
    return { result: await done }
  } catch (error) {
    return { error: callError(error) }
  }
}

/** The result a forwarded write answered, or its error thrown again (a `StoreError` as one). */
export function resultOf(answer: ForwardedResult): WriteResult {
  if ('result' in answer) return answer.result
  throw thrownAgain(answer.error)
}
