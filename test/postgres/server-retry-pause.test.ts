/**
 * A write that met a deadlock or a serialization failure is tried again after a jittered,
 * growing pause (4 ms doubling, at most 200 ms), not at once.
 */
import { expect, it } from 'vitest'
import { retryPauseMs } from '../../adapters/postgres/retry.js'

it('the pause grows from under 4 ms to under 200 ms, drawn anywhere in its range', () => {
  const highest = (attempt: number) => retryPauseMs(attempt, () => 0.999999)
  expect([1, 2, 3, 4, 5, 6, 7, 8, 9].map(highest)).toEqual([3, 7, 15, 31, 63, 127, 199, 199, 199])
  expect(retryPauseMs(9, () => 0)).toBe(0)
  expect(retryPauseMs(3, () => 0.5)).toBe(8)
  const drawn = new Set(Array.from({ length: 50 }, () => retryPauseMs(6)))
  expect(drawn.size).toBeGreaterThan(5)
})
