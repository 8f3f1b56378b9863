/**
 * A second store of one directory in the same process (as `serve`'s heavy lane opens one) may open
 * and close while the first is in use, and another process may then open the directory too: the
 * first keeps working. Closing any descriptor of LMDB's lock file drops every lock this process
 * holds on it, so another process took itself for the only one and reset the reader table under
 * the first store (`MDB_BAD_RSLOT` on its every read).
 */
import { expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { put, T } from './fixtures.js'
import { closed, startChild, tempDir } from './helpers.js'

it('keeps the first store working after a second one of its directory closed and another process opened it', async () => {
  const path = await tempDir()
  const first = await fileStore({ path, durability: 'none' })
  await first.write({ ops: [put('before')] })
  const second = await fileStore({ path, durability: 'none' })
  expect(await second.getToken(T, 'before')).not.toBeNull()
  await second.close()
  const child = startChild(['write', path, 'other', '1', '1'])
  let out = ''
  child.stdout!.on('data', (d) => {
    out += d
  })
  for (let i = 0; i < 300 && !out.includes('done'); i++) await new Promise((r) => setTimeout(r, 50))
  child.kill('SIGKILL')
  await closed(child)
  expect(out).toContain('ack other-0')
  expect(await first.getToken(T, 'before')).not.toBeNull()
  expect(await first.getToken(T, 'other-0-a')).not.toBeNull()
  expect((await first.write({ ops: [put('after')] })).ok).toBe(true)
  await first.close()
})
