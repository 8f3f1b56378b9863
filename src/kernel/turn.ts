/**
 * Resolves on the event loop's next turn (`setImmediate`): what a long piece of work awaits between
 * two bounded steps so that waiting calls run. Never a timer: tests run on a manual clock.
 */
export const nextTurn = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve))
