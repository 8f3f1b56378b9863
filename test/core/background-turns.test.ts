/**
 * `backgroundTurn` resolves on a turn of the event loop with no call of its service in flight, or
 * on the `BACKGROUND_MAX_WAIT`th turn it waited while calls never stopped: background work (the
 * re-encryption sweep) yields to calls, a bounded number of turns, never a timer.
 */
import { describe, expect, it } from 'vitest'
import { backgroundTurn, CallsInFlight } from '../../src/kernel/index.js'
import { turnsWhile } from '../support/turns.js'

describe('backgroundTurn', () => {
  it('resolves on the next turn when no call is in flight', async () => {
    const calls = new CallsInFlight()
    const { turns } = await turnsWhile(() => backgroundTurn(calls))
    expect(turns).toBeLessThanOrEqual(1)
  })

  it('waits while a call is in flight and resolves on the turn it ends', async () => {
    const calls = new CallsInFlight()
    calls.begin()
    let resolved = false
    const waiting = backgroundTurn(calls).then(() => {
      resolved = true
    })
    for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve))
    expect(resolved).toBe(false)
    calls.end()
    // Five turns waited: the bound would take ten more; the call's end takes one.
    const { turns } = await turnsWhile(() => waiting)
    expect(turns).toBeLessThanOrEqual(1)
  })

  it('waits 16 turns at most while calls never stop', async () => {
    const calls = new CallsInFlight()
    calls.begin()
    const { turns } = await turnsWhile(() => backgroundTurn(calls))
    expect(turns).toBeGreaterThanOrEqual(15)
    expect(turns).toBeLessThanOrEqual(17)
    calls.end()
  })
})
