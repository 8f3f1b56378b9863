/**
 * A child process for the asynchronous-react crash test, killed with SIGKILL by its parent:
 * `STORE MASTER KEY REACTOR` accepts one asynchronous react of REACTOR with API key KEY, printing
 * `accepted <request id>`; its runner prints `running` when the run starts and never ends it.
 * STORE is `file:DIR` or `pg:SCHEMA` (on `TOKENVAULT_PG_URL`); MASTER is the master key in base64.
 */
import { fileStore } from '../../adapters/file/index.js'
import { postgresStore } from '../../adapters/postgres/index.js'
import { createService, systemClock } from '../../entry/index.js'
import type { Store } from '../../src/store/index.js'

const [spec, master, key, reactorId] = process.argv.slice(2)

async function open(s: string): Promise<Store> {
  if (s.startsWith('file:')) return fileStore({ path: s.slice(5) })
  return postgresStore({ connectionString: process.env['TOKENVAULT_PG_URL']!, schema: s.slice(3) })
}

const service = createService({
  store: await open(spec!),
  clock: systemClock,
  masterKey: Buffer.from(master!, 'base64'),
  runner: {
    check: async () => null,
    run: () => {
      process.stdout.write('running\n')
      return new Promise(() => {})
    },
    close: async () => {},
  },
})
const { asyncReactorRequestId } = await service
  .connect(key!)
  .reactors.reactAsync(reactorId!, { args: { a: 2, b: 3 } })
process.stdout.write(`accepted ${asyncReactorRequestId}\n`)
setInterval(() => {}, 1 << 30)
