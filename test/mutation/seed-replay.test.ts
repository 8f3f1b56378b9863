/**
 * A failing property prints the `TOKENVAULT_TEST_SEED=<seed>:<path>` that replays it, and that
 * variable replays it: the same counterexample, for a planted property and for the store
 * equivalence harness over a store with a planted defect.
 */
import fc from 'fast-check'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { delegatingStore } from '../../src/store/delegate.js'
import { checkEquivalence } from '../../testing/store/equivalence.js'
import { assertProperty, parseReplay, propertyParameters } from '../../testing/store/seed.js'

afterEach(() => {
  vi.unstubAllEnvs()
})

/** Runs `run`, which must fail; answers its message's counterexample and replay variable. */
async function failureOf(run: () => Promise<void>) {
  let message = ''
  await run().then(
    () => expect.fail('the property held'),
    (error: Error) => {
      message = error.message
    },
  )
  const replay = /replay: TOKENVAULT_TEST_SEED=(\S+)$/.exec(message)?.[1]
  const counterexample = /Counterexample: (.*)/.exec(message)?.[1]
  expect(replay, message).toBeDefined()
  expect(counterexample, message).toBeDefined()
  return { replay: replay!, counterexample: counterexample!, message }
}

/** A property that fails on any array holding a number above 900. */
const planted = () =>
  assertProperty(
    fc.property(fc.array(fc.integer({ min: 0, max: 1000 })), (xs) => {
      expect(xs.every((x) => x <= 900)).toBe(true)
    }),
  )

describe('TOKENVAULT_TEST_SEED', () => {
  it('reads <seed> or <seed>:<path>, and refuses anything else naming the variable', () => {
    expect(parseReplay(undefined)).toBeUndefined()
    expect(parseReplay('42')).toEqual({ seed: 42 })
    expect(parseReplay('-7:3:0:1')).toEqual({ seed: -7, path: '3:0:1' })
    expect(() => parseReplay('abc')).toThrow(/TOKENVAULT_TEST_SEED must be/)
    expect(propertyParameters({ numRuns: 5, seed: 1 }, { TOKENVAULT_TEST_SEED: '9:2' })).toEqual({
      numRuns: 5,
      seed: 9,
      path: '2',
    })
    expect(propertyParameters({ numRuns: 5 }, {})).toEqual({ numRuns: 5 })
  })

  it('a failing property prints its seed and path, and that value replays the same counterexample', async () => {
    const first = await failureOf(planted)
    expect(first.replay).toMatch(/^-?\d+:\d+(:\d+)*$/)
    // The seed alone runs the same cases again; seed and path go straight to the counterexample.
    vi.stubEnv('TOKENVAULT_TEST_SEED', first.replay.split(':')[0]!)
    expect((await failureOf(planted)).counterexample).toBe(first.counterexample)
    vi.stubEnv('TOKENVAULT_TEST_SEED', first.replay)
    const replayed = await failureOf(planted)
    expect(replayed.counterexample).toBe(first.counterexample)
    expect(replayed.replay).toBe(first.replay)
  })

  it('the store equivalence harness honours it: a planted defect fails again on its printed seed', async () => {
    // A store whose token list of tenant T leaves out token b.
    const harness = {
      name: 'planted',
      runs: 40,
      open: async () => {
        const inner = memoryStore()
        return delegatingStore(inner, {
          listTokens: async (tenant, query) => {
            const page = await inner.listTokens(tenant, query)
            return tenant === 'T' ? { ...page, items: page.items.filter((t) => t.id !== 'b') } : page
          },
        })
      },
    }
    vi.stubEnv('TOKENVAULT_TEST_SEED', '20301121')
    const first = await failureOf(() => checkEquivalence(harness))
    expect(first.replay.startsWith('20301121:')).toBe(true)
    vi.stubEnv('TOKENVAULT_TEST_SEED', first.replay)
    const replayed = await failureOf(() => checkEquivalence(harness))
    expect(replayed.counterexample).toBe(first.counterexample)
  }, 120_000)
})
