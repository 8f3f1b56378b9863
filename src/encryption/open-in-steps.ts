import type { StagedWrite, StoredToken } from '../kernel/index.js'
import { nextTurn } from '../kernel/index.js'
import { openStaged, openTokenInSteps, type Sealing, sealedPayload } from './sealing.js'

/**
 * Sealed bytes opened in one synchronous step of a page (base64 characters, or bytes as a store
 * keeps them): a page of 4 MiB opens in about 16 steps with a turn for other work (`setImmediate`)
 * between two, so another tenant's request waits behind one step, not the page. A token larger
 * than this opens in steps of this many bytes of its own (`openTokenInSteps`).
 */
export const OPEN_STEP_BYTES = 256 * 1024

/**
 * What opening one item counts as at the least, in sealed bytes: a decipher made, run and checked
 * costs about as much as 16 KiB of bytes, so a step opens at most 16 small tokens (a page of 20
 * small tokens, answered by a search, opened in one block of about a millisecond).
 */
export const OPEN_ITEM_MIN_BYTES = 16 * 1024

/** How many sealed bytes `value` holds (0 for a value in the clear: legacy plaintext). */
const sealedSize = (value: unknown) => sealedPayload(value)?.length ?? 0

/**
 * `items` opened one after another in order, a turn between two steps once `OPEN_STEP_BYTES` of
 * sealed bytes have added up, each item counted as `OPEN_ITEM_MIN_BYTES` at the least; the first
 * item never waits.
 */
export async function openInSteps<T>(
  items: readonly T[],
  sizeOf: (item: T) => number,
  open: (item: T) => T | Promise<T>,
): Promise<T[]> {
  const opened: T[] = []
  let step = 0
  for (const item of items) {
    const size = Math.max(sizeOf(item), OPEN_ITEM_MIN_BYTES)
    if (step > 0 && step + size > OPEN_STEP_BYTES) {
      await nextTurn()
      step = 0
    }
    opened.push(await open(item))
    step += size
  }
  return opened
}

/**
 * A page of stored tokens opened in bounded steps (`OPEN_STEP_BYTES`), a token larger than a step
 * in steps of its own: its base64 decoded and its bytes decrypted a step at a time, then its text
 * decoded, then parsed (`openTokenInSteps`).
 */
export function openTokensInSteps(s: Sealing, tokens: readonly StoredToken[]): Promise<StoredToken[]> {
  return openInSteps(
    tokens,
    (t) => sealedSize(t.data),
    (t) => openTokenInSteps(s, t, OPEN_STEP_BYTES),
  )
}

/** Staged writes opened in bounded steps (`OPEN_STEP_BYTES`): a staged delete holds nothing sealed. */
export function openStagedInSteps(s: Sealing, staged: readonly StagedWrite[]): Promise<StagedWrite[]> {
  return openInSteps(
    staged,
    (w) => sealedSize(w.token?.data),
    (w) => openStaged(s, w),
  )
}
