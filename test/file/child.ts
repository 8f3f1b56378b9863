/**
 * A child process for the crash and lock tests. `hold DIR`: opens the store (its lock's heartbeat
 * from `LOCK_STALE_MS` when set), prints `ready`, and waits to be killed. `write DIR PREFIX MAX`: opens the store (compacting often), prints `ready`,
 * then writes up to MAX batches from 8 concurrent writers, printing `ack <id>` once each is
 * acknowledged. Each batch puts two tokens, links them, and stages one write into transaction
 * `tx-crash` (not idempotent: a batch replayed twice would show up twice).
 */
import { fileStore } from '../../adapters/file/index.js'
import { link, put, stage, T, tx } from './fixtures.js'

const [mode, dir, prefix = 'b', max = '300'] = process.argv.slice(2)
const staleMs = process.env['LOCK_STALE_MS']
const store = await fileStore({
  path: dir!,
  compactMinBytes: 32 * 1024,
  compactRatio: 1,
  ...(staleMs ? { lockStaleMs: Number(staleMs) } : {}),
})
if (mode === 'hold') {
  process.stdout.write('ready\n')
  setInterval(() => {}, 1 << 30)
} else {
  if (!(await store.getTransaction(T, 'tx-crash'))) {
    await store.write({
      ops: [
        { op: 'transaction.put', transaction: tx('tx-crash', { expires_at: '2999-01-01T00:00:00.000Z' }) },
      ],
    })
  }
  process.stdout.write('ready\n')
  let next = 0
  const limit = Number(max)
  const writer = async () => {
    while (next < limit) {
      const id = `${prefix}-${next++}`
      await store.write({
        ops: [
          put(`${id}-a`),
          put(`${id}-b`),
          link(`${id}-a`, `${id}-b`),
          stage('tx-crash', [{ op: 'token.delete', tenant_id: T, id: `${id}-a` }], []),
        ],
      })
      process.stdout.write(`ack ${id}\n`)
    }
  }
  await Promise.all(Array.from({ length: 8 }, writer))
  process.stdout.write('done\n')
  setInterval(() => {}, 1 << 30)
}
