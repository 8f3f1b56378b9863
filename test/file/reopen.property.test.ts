import fc from 'fast-check'
import { describe, it } from 'vitest'
import { tempDir } from './helpers.js'
import { reopenHoldsWhatWasWritten, rounds } from './reopen.js'

/** Fixed, so a failure replays: fast-check prints the seed and the shrunk round it failed on. */
const SEED = 20_240_611

describe('file store reopen (property)', () => {
  it('a store closed cleanly after concurrent creates and deletes opens again, holding what was acknowledged', async () => {
    await fc.assert(
      fc.asyncProperty(rounds, async (round) => reopenHoldsWhatWasWritten(await tempDir(), round)),
      { seed: SEED, numRuns: 10, endOnFailure: true },
    )
  }, 60_000)
})
