/**
 * A delivering process for the two-process webhook test (`two-processes.ts`): `STORE MASTER ORIGIN
 * NAME` opens the store (`file:DIR`, or `pg:SCHEMA` on `TOKENVAULT_PG_URL`) with the real clock and
 * the receiver's ORIGIN allowed, prints `ready`, then obeys its stdin: `go` runs `deliverDue()` over
 * and over, `pause` stops that (answering `paused`). Its requests carry `x-process: NAME`, so the
 * receiver knows which process made each attempt.
 */
import { createInterface } from 'node:readline'
import { egressFetch } from '../../adapters/egress/index.js'
import { fileStore } from '../../adapters/file/index.js'
import { postgresStore } from '../../adapters/postgres/index.js'
import { createService, systemClock } from '../../entry/index.js'
import type { Store } from '../../src/store/index.js'

const [spec, master, origin, name] = process.argv.slice(2)

async function open(s: string): Promise<Store> {
  if (s.startsWith('file:')) return fileStore({ path: s.slice(5) })
  return postgresStore({ connectionString: process.env['TOKENVAULT_PG_URL']!, schema: s.slice(3) })
}

const service = createService({
  store: await open(spec!),
  clock: systemClock,
  masterKey: Buffer.from(master!, 'base64'),
  runner: null,
  egress: [origin!],
  egressClient: (origins, request, limits) =>
    egressFetch(origins, { ...request, headers: { ...request.headers, 'x-process': name! } }, limits),
  webhookDelivery: 'manual',
})

let running = false
let loop: Promise<void> = Promise.resolve()
async function deliverLoop() {
  while (running) {
    const attempted = await service.admin.webhooks.deliverDue()
    if (!attempted) await new Promise((r) => setTimeout(r, 50))
  }
}

createInterface({ input: process.stdin }).on('line', async (line) => {
  if (line === 'go' && !running) {
    running = true
    loop = deliverLoop()
  } else if (line === 'pause') {
    running = false
    await loop
    process.stdout.write('paused\n')
  }
})
process.stdout.write('ready\n')
