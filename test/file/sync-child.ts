/**
 * A child process for the durability test. `DIR DURABILITY`: opens the file store, prints `ready`,
 * writes one token and prints `ack` once the write resolves, then closes the store and exits.
 */

import type { Durability } from '../../adapters/file/index.js'
import { fileStore } from '../../adapters/file/index.js'
import { put } from './fixtures.js'

const [dir, durability] = process.argv.slice(2)
const store = await fileStore({ path: dir!, durability: durability as Durability })
process.stdout.write('ready\n')
const result = await store.write({ ops: [put('durable')] })
process.stdout.write(result.ok ? 'ack\n' : 'refused\n')
await store.close()
