import fc from 'fast-check'

/**
 * The one environment variable every property test reads: `TOKENVAULT_TEST_SEED=<seed>` runs the
 * property's cases from that seed; `TOKENVAULT_TEST_SEED=<seed>:<path>` (as a failure prints it)
 * replays just the shrunk counterexample. Not `TOKENVAULT_SEED`, which meant a fixture to the CLI.
 */
export const SEED_VARIABLE = 'TOKENVAULT_TEST_SEED'

/** A seed and an optional fast-check path, as `TOKENVAULT_TEST_SEED` holds them. */
export interface Replay {
  seed: number
  path?: string
}

/** Reads `<seed>` or `<seed>:<path>` (undefined when empty); throws on anything else, naming the variable. */
export function parseReplay(text: string | undefined): Replay | undefined {
  if (text === undefined || text.trim() === '') return undefined
  const match = /^\s*(-?\d+)(?::(\d+(?::\d+)*))?\s*$/.exec(text)
  if (!match)
    throw new Error(`${SEED_VARIABLE} must be <seed> or <seed>:<path> (as a failure prints it), not ${text}`)
  return { seed: Number(match[1]), ...(match[2] === undefined ? {} : { path: match[2] }) }
}

/**
 * The fast-check parameters of a property run: `given`, with the seed (and path) of
 * `TOKENVAULT_TEST_SEED` when it is set, else `given.seed` (a fixed seed) or a fresh random one.
 */
export function propertyParameters<T>(given: fc.Parameters<T> = {}, env = process.env): fc.Parameters<T> {
  const replay = parseReplay(env[SEED_VARIABLE])
  if (replay === undefined) return given
  return { ...given, seed: replay.seed, ...(replay.path === undefined ? {} : { path: replay.path }) }
}

/** The line a failure ends with: the variable that replays it. */
export function replayLine(seed: number, path: string | null | undefined): string {
  return `replay: ${SEED_VARIABLE}=${seed}${path ? `:${path}` : ''}`
}

/**
 * `fc.assert` that reads `TOKENVAULT_TEST_SEED` (see `propertyParameters`) and, on a failure,
 * throws fast-check's report (the counterexample, the seed, the path) followed by the
 * `TOKENVAULT_TEST_SEED=<seed>:<path>` that replays it.
 */
export async function assertProperty<T>(
  property: fc.IAsyncProperty<T> | fc.IProperty<T>,
  given: fc.Parameters<T> = {},
): Promise<void> {
  const details = await fc.check(property as fc.IAsyncProperty<T>, propertyParameters(given))
  if (!details.failed) return
  const report = fc.defaultReportMessage(details) ?? 'the property failed'
  const error = new Error(`${report}\n${replayLine(details.seed, details.counterexamplePath)}`)
  if (details.errorInstance !== null) (error as { cause?: unknown }).cause = details.errorInstance
  throw error
}
