/**
 * A child process for the default-durability test. `DIR HOW`: opens a file store in DIR with no
 * durability option — as `fileStore({ path })` (HOW `fileStore`) or as the CLI opens `--store
 * file:DIR` (HOW `cli`) — prints `ready`, writes one token and prints `ack` once the write
 * resolves, then closes the store and exits.
 */

import { fileStore } from '../../adapters/file/index.js'
import { openStore } from '../../bin/stores.js'
import { put } from './fixtures.js'

const [dir, how] = process.argv.slice(2)
const store = how === 'cli' ? (await openStore(`file:${dir!}`)).store : await fileStore({ path: dir! })
process.stdout.write('ready\n')
const result = await store.write({ ops: [put('durable')] })
process.stdout.write(result.ok ? 'ack\n' : 'refused\n')
await store.close()
