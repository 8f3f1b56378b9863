/**
 * The child of `kill.slow.test.ts`: a service on the store named by its arguments, 64 writers each
 * creating a token and reading one back, every call with its own request id; each acknowledged call
 * is printed (`ack <request id>`) only after its answer came, so the parent knows what was
 * acknowledged when it kills this process.
 *
 * With `reads` last, each writer creates one token and then only reads it, so (on the file store)
 * the commits carry nothing but read entries.
 *
 *   kill-child.ts <file DIR | postgres URL SCHEMA> <master key hex> <api key> [reads]
 */
import { fileStore } from '../../adapters/file/index.js'
import { postgresStore } from '../../adapters/postgres/index.js'
import { createService, systemClock } from '../../entry/index.js'

const [kind, where, ...rest] = process.argv.slice(2)
const schema = kind === 'postgres' ? rest.shift()! : ''
const [masterHex, apiKey, mode] = rest
const store =
  kind === 'file'
    ? await fileStore({ path: where! })
    : await postgresStore({ connectionString: where!, schema })
const service = createService({
  store,
  clock: systemClock,
  masterKey: Buffer.from(masterHex!, 'hex'),
  runner: null,
})
let n = 0
const next = () => `${process.pid}-${n++}`
process.stdout.write('ready\n')
await Promise.all(
  Array.from({ length: 64 }, async () => {
    for (;;) {
      const created = next()
      const token = await service
        .connect(apiKey!, { requestId: created })
        .tokens.create({ type: 'token', data: 'x' })
      process.stdout.write(`ack ${created} ${token.id}\n`)
      do {
        const read = next()
        await service.connect(apiKey!, { requestId: read }).tokens.get(token.id)
        process.stdout.write(`ack ${read} ${token.id}\n`)
      } while (mode === 'reads')
    }
  }),
)
