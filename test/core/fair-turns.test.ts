/**
 * `nextTurn` resolves its waiters one per turn of the event loop, in the order they came, so a
 * short wait queued behind many long steps (`lightTurn`, the audit log's group commit) waits for
 * one step, not all of them (`npm run bench:attacks`, attack (b): eight pages of large tokens each
 * with a step queued made another tenant's GET wait for every one); and a turn's light waits go
 * before its step, so that short wait does not wait for the step either (attack (a): a GET that
 * came while 400 KB creates were under way waited for the step in progress and one more).
 */
import { describe, expect, it } from 'vitest'
import { lightTurn, nextTurn } from '../../src/kernel/index.js'

/** `count` loops that each await `nextTurn` `steps` times, logging `name:i` at each step. */
function stepping(count: number, steps: number, log: string[]) {
  return Promise.all(
    Array.from({ length: count }, async (_, n) => {
      for (let i = 0; i < steps; i++) {
        await nextTurn()
        log.push(`${n}:${i}`)
      }
    }),
  )
}

describe('nextTurn', () => {
  it('runs at most one waiting step before a light wait queued after many', async () => {
    const log: string[] = []
    const work = stepping(8, 3, log)
    // The eight first steps are queued; the light wait comes after them.
    await lightTurn().then(() => log.push('light'))
    await work
    expect(log.indexOf('light')).toBeLessThanOrEqual(1)
    expect(log).toHaveLength(25)
  })

  it("runs a turn's light waits, and the calls they wake, before its step", async () => {
    const log: string[] = []
    const work = stepping(1, 2, log)
    // Queued after the first step, and its call waits on a promise once more before logging.
    const light = lightTurn()
      .then(() => Promise.resolve())
      .then(() => log.push('light'))
    await Promise.all([work, light])
    expect(log).toEqual(['light', '0:0', '0:1'])
  })

  it('resolves a step that a call woken by a light wait queued in a later turn, not the same one', async () => {
    const log: string[] = []
    let running = true
    const tick = () => {
      log.push('tick')
      if (running) setImmediate(tick)
    }
    await lightTurn()
    setImmediate(tick)
    await lightTurn()
    log.push('woken')
    await nextTurn()
    log.push('step')
    running = false
    expect(log.slice(log.indexOf('woken'))).toContain('tick')
    expect(log.indexOf('tick', log.indexOf('woken'))).toBeLessThan(log.indexOf('step'))
  })

  it('resolves a light wait queued while light waits run in the next turn, after that step', async () => {
    const log: string[] = []
    const work = stepping(1, 2, log)
    const again = lightTurn().then(() => lightTurn().then(() => log.push('again')))
    await Promise.all([work, again])
    expect(log).toEqual(['0:0', 'again', '0:1'])
  })

  it('resolves its waiters first come, first served, one per turn of the event loop', async () => {
    const log: string[] = []
    let turns = 0
    let running = true
    const tick = () => {
      turns++
      if (running) setImmediate(tick)
    }
    setImmediate(tick)
    await stepping(4, 2, log)
    running = false
    // Each loop's step in the order the loops came, round after round.
    expect(log).toEqual(['0:0', '1:0', '2:0', '3:0', '0:1', '1:1', '2:1', '3:1'])
    // Eight steps, a turn each: other immediates ran between two.
    expect(turns).toBeGreaterThanOrEqual(8)
  })

  it('resolves a waiter that came while the queue emptied', async () => {
    await nextTurn()
    const again = nextTurn().then(() => 'resolved')
    await expect(again).resolves.toBe('resolved')
  })
})
