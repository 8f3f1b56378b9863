/**
 * How many turns of the event loop other work got while `run` ran, and what it answered. The first
 * turn is taken before `run` starts: only turns taken while it runs count.
 */
export async function turnsWhile<T>(run: () => Promise<T>): Promise<{ turns: number; value: T }> {
  let turns = 0
  let running = true
  const tick = () => {
    turns++
    if (running) setImmediate(tick)
  }
  setImmediate(tick)
  await new Promise<void>((resolve) => setImmediate(resolve))
  turns = 0
  const value = await run()
  running = false
  return { turns, value }
}
