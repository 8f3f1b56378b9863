/**
 * A child process for the data-key crash tests, killed with SIGKILL at some point by its parent.
 * - `seal STORE MASTER KEY N BLOCK`: creates N tokens one after another with API key KEY (seals
 *   reserved BLOCK at a time), printing `ack <id> <n>` once each is acknowledged, then `done`.
 * - `sweep STORE MASTER TENANT BATCH`: runs the re-encryption sweep of TENANT to its end (old
 *   versions retired at once: `refreshMs` 0), printing `step <done> <resealed>` after each step and
 *   `finished` at the end.
 * STORE is `file:DIR` or `pg:SCHEMA` (on `TOKENVAULT_PG_URL`); MASTER is the master key in base64.
 */
import { fileStore } from '../../adapters/file/index.js'
import { postgresStore } from '../../adapters/postgres/index.js'
import { createService, systemClock } from '../../entry/index.js'
import type { Store } from '../../src/store/contract.js'

const [mode, spec, master, arg, count, size] = process.argv.slice(2)

async function open(s: string): Promise<Store> {
  if (s.startsWith('file:')) return fileStore({ path: s.slice(5) })
  return postgresStore({ connectionString: process.env['TOKENVAULT_PG_URL']!, schema: s.slice(3) })
}

const store = await open(spec!)
const masterKey = Buffer.from(master!, 'base64')
const idle = () => setInterval(() => {}, 1 << 30)

if (mode === 'seal') {
  const service = createService({
    store,
    clock: systemClock,
    runner: null,
    masterKey,
    dataKeys: { sealBlock: Number(size) },
  })
  const client = service.connect(arg!)
  process.stdout.write('ready\n')
  for (let n = 0; n < Number(count); n++) {
    const made = await client.tokens.create({ type: 'token', data: { n } })
    process.stdout.write(`ack ${made.id} ${n}\n`)
  }
  process.stdout.write('done\n')
  idle()
} else if (mode === 'sweep') {
  const service = createService({
    store,
    clock: systemClock,
    runner: null,
    masterKey,
    dataKeys: { refreshMs: 0 },
  })
  process.stdout.write('ready\n')
  const progress = await service.admin.reencrypt({
    tenantId: arg!,
    batchSize: Number(count),
    onProgress: (p) => process.stdout.write(`step ${p.done} ${p.resealed}\n`),
  })
  process.stdout.write(progress.finished ? 'finished\n' : 'unfinished\n')
  idle()
} else {
  throw new Error(`unknown mode ${mode}`)
}
