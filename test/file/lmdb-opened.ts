import type * as Lmdb from 'lmdb'

/** Every environment lmdb opened since the test file began, in order (see `noting`). */
export const opened: object[] = []

/**
 * lmdb as it is, but for `open`, which also notes in `opened` each environment it opened: what a
 * test file's mock of lmdb answers, to reach the store's environment, as
 * `vi.mock('lmdb', async (original) => (await import('./lmdb-opened.js')).noting(await original()))`.
 */
export function noting(lmdb: typeof Lmdb): typeof Lmdb {
  return {
    ...lmdb,
    // lmdb's `open` is overloaded; the wrapper passes whatever it is given.
    open: ((...args: unknown[]) => {
      const env = (lmdb.open as (...a: unknown[]) => object)(...args)
      opened.push(env)
      return env
    }) as typeof lmdb.open,
  }
}
