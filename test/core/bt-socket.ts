import { once } from 'node:events'
import { createServer } from 'node:http'
import { createHttpHandler, toNodeListener } from '../../adapters/http/index.js'
import type { Service } from '../../entry/index.js'

/**
 * Serves `service` on a loopback socket with `headerPrefix: 'BT'`, runs `fn` with the base URL the
 * SDKs need (`http://localhost:PORT`: they keep plain http only for `localhost`), then closes it.
 */
export async function withBtSocket<T>(service: Service, fn: (baseUrl: string) => Promise<T>): Promise<T> {
  const server = createServer(
    toNodeListener(createHttpHandler(service, { headerPrefix: 'BT', log: () => {} })),
  )
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  try {
    return await fn(`http://localhost:${(server.address() as { port: number }).port}`)
  } finally {
    server.closeAllConnections()
    server.close()
  }
}
