/**
 * A child process for the crash test. `write DIR PREFIX MAX WRITERS`: opens the store, prints
 * `ready`, then writes up to MAX batches from WRITERS concurrent writers, printing `ack <id>` once
 * each is acknowledged. Each batch, guarded by its first token's absence, puts two tokens and links
 * them: a batch applied in part would show as a token without its pair or link.
 */
import { fileStore } from '../../adapters/file/index.js'
import { link, put, T } from './fixtures.js'

const [, dir, prefix = 'b', max = '300', writers = '64'] = process.argv.slice(2)
const store = await fileStore({ path: dir! })
process.stdout.write('ready\n')
let next = 0
const limit = Number(max)
const writer = async () => {
  while (next < limit) {
    const id = `${prefix}-${next++}`
    const result = await store.write({
      checks: [{ check: 'token.absent', tenant_id: T, id: `${id}-a` }],
      ops: [put(`${id}-a`), put(`${id}-b`), link(`${id}-a`, `${id}-b`)],
    })
    if (result.ok) process.stdout.write(`ack ${id}\n`)
  }
}
await Promise.all(Array.from({ length: Number(writers) }, writer))
process.stdout.write('done\n')
setInterval(() => {}, 1 << 30)
