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

/** How many sealed bytes `value` holds (0 for a value in the clear: legacy plaintext). */
const sealedSize = (value: unknown) => sealedPayload(value)?.length ?? 0

/**
 * `items` opened one after another in order, a turn between two steps once `OPEN_STEP_BYTES` of
 * sealed bytes have added up; the first item never waits.
 */
export async function openInSteps<T>(
  items: readonly T[],
  sizeOf: (item: T) => number,
  open: (item: T) => T | Promise<T>,
): Promise<T[]> {
  const opened: T[] = []
  let step = 0
  for (const item of items) {
    const size = sizeOf(item)
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
