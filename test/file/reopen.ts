import fc from 'fast-check'
import { fileStore } from '../../adapters/file/index.js'
import type { Op } from '../../src/store/index.js'
import { put, T } from './fixtures.js'

/** One round: batches of creates and deletes, each batch's writes issued together (they share commits). */
export type Round = { id: number; size: number; del: boolean }[][]

/** Token ids 0–39, data from a few bytes to past a page (overflow pages), creates and deletes mixed. */
export const rounds = fc.array(
  fc.array(
    fc.record({
      id: fc.integer({ min: 0, max: 39 }),
      size: fc.oneof(fc.integer({ min: 1, max: 300 }), fc.integer({ min: 2000, max: 20_000 })),
      del: fc.boolean(),
    }),
    { minLength: 1, maxLength: 30 },
  ),
  { minLength: 1, maxLength: 8 },
)

/**
 * Runs `round` on a new store in `path`, closes it cleanly, and opens it again: the store opens and
 * holds exactly the tokens the acknowledged writes left.
 */
export async function reopenHoldsWhatWasWritten(path: string, round: Round): Promise<void> {
  const store = await fileStore({ path })
  const model = new Map<string, number>()
  for (const batch of round) {
    const writes = batch.map(({ id, size, del }) => {
      const op: Op = del
        ? { op: 'token.delete', tenant_id: T, id: `t${id}` }
        : put(`t${id}`, { data: 'd'.repeat(size) })
      return store.write({ ops: [op] }).then(
        () => (del ? model.delete(`t${id}`) : model.set(`t${id}`, size)),
        () => {},
      )
    })
    await Promise.all(writes)
  }
  await store.close()
  const again = await fileStore({ path })
  try {
    const held = new Map((await again.dump()).tokens.map((t) => [t.id, (t.data as string).length]))
    if (JSON.stringify([...held].sort()) !== JSON.stringify([...model].sort()))
      throw new Error(
        `reopened store holds ${[...held.keys()].sort()} instead of ${[...model.keys()].sort()}`,
      )
  } finally {
    await again.close()
  }
}
