import fc from 'fast-check'
import { describe, it } from 'vitest'
import type { Store } from '../../src/store/index.js'
import { nameFilter, step } from './arbitraries.js'
import { expectSameAsModel } from './observe.js'
import { assertProperty } from './seed.js'

/** How the equivalence harness gets stores. */
export interface EquivalenceHarness {
  name: string
  /** A new, empty store for each random sequence. */
  open(): Promise<Store>
  /** Closes and reopens the same store (durable stores): the harness reopens between steps. */
  reopen?(store: Store): Promise<Store>
  /** How many random sequences to run. @default 40 */
  runs?: number
}

/**
 * Runs the harness's random sequences once (what `storeEquivalence`'s test does): resolves when the
 * store answered every step as the model, else rejects with the counterexample and the
 * `TOKENVAULT_TEST_SEED=<seed>:<path>` that replays it (see `assertProperty`; the variable, when
 * set, picks the seed and path of this run).
 */
export async function checkEquivalence(harness: EquivalenceHarness): Promise<void> {
  await assertProperty(
    fc.asyncProperty(
      fc.array(step, { maxLength: 16 }),
      fc.array(nameFilter, { maxLength: 3 }),
      async (steps, filters) => {
        const store = await harness.open()
        let last = store
        try {
          last = await expectSameAsModel(store, steps, filters, harness.reopen?.bind(harness))
        } finally {
          await last.close().catch(() => {})
        }
      },
    ),
    { numRuns: harness.runs ?? 40 },
  )
}

/**
 * The model-based equivalence harness: random sequences of write batches (over a tiny universe of
 * ids, so that they collide), expiry listings and sweeps, each step answered by the store exactly
 * as by the contract model (`testing/store/model.ts`: plain arrays and linear scans, sharing no
 * code with any store), then every read compared. Durable stores are reopened every few steps.
 * A failure prints the `TOKENVAULT_TEST_SEED` that replays it. Needs vitest and fast-check
 * (optional peer dependencies).
 */
export function storeEquivalence(harness: EquivalenceHarness): void {
  describe(`Store equivalence: ${harness.name}`, () => {
    it(
      'answers every write and read as the reference model does, on random sequences',
      () => checkEquivalence(harness),
      120_000,
    )
  })
}
