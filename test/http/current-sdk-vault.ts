import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import { BasisTheory as BasisTheoryJs } from '@basis-theory/basis-theory-js4'
import type { BasisTheory as BtJs } from '@basis-theory/basis-theory-js4/types/sdk/index.js'
import { BasisTheoryClient } from '@basis-theory/node-sdk'
import { createHttpHandler, toNodeListener } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock, type Service } from '../../entry/index.js'
import type { FormulaRunner } from '../../src/kernel/runner.js'
import type { Permission } from '../../src/kernel/types.js'
import { ALL_MANAGEMENT } from './setup.js'

/** A vault served on a real socket with `headerPrefix: 'BT'`, and clients of today's SDKs for it. */
export interface CurrentSdkVault {
  service: Service
  clock: ReturnType<typeof manualClock>
  server: Server
  url: string
  tenantId: string
  /** A management key holding every management permission. */
  management: string
  /** A new application of the tenant; its key. */
  key(type: 'private' | 'public' | 'management', permissions: Permission[]): Promise<string>
  /** `@basis-theory/node-sdk` (5.x) for `key`. */
  node(key: string): BasisTheoryClient
  /** `@basis-theory/basis-theory-js` (4.x) for `key`. */
  js(key: string): Promise<BtJs>
  close(): Promise<void>
}

/** Starts a vault on 127.0.0.1 (the SDKs reach it as `http://localhost:PORT`). */
export async function startCurrentSdkVault(runner: FormulaRunner): Promise<CurrentSdkVault> {
  const clock = manualClock('2030-01-01T00:00:00.000Z')
  const service = createService({ store: memoryStore(), clock, runner })
  const tenant = await service.admin.createTenant({ name: 'sdk' })
  const key: CurrentSdkVault['key'] = async (type, permissions) =>
    (await service.admin.createApplication({ tenantId: tenant.id, name: type, type, permissions })).key
  const management = await key('management', ALL_MANAGEMENT)
  const server = createServer(
    toNodeListener(createHttpHandler(service, { headerPrefix: 'BT', log: () => {} })),
  )
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('no port')
  const url = `http://localhost:${address.port}`
  return {
    service,
    clock,
    server,
    url,
    tenantId: tenant.id,
    management,
    key,
    node: (apiKey) => new BasisTheoryClient({ apiKey, baseUrl: url, maxRetries: 0 }),
    js: (apiKey) => new BasisTheoryJs().init(apiKey, { apiBaseUrl: url, disableTelemetry: true }),
    async close() {
      server.closeAllConnections()
      server.close()
      await service.close()
    },
  }
}

/** The status of a failed SDK call (node-sdk: `statusCode`; basis-theory-js: `status`). */
export async function failedStatus(promise: Promise<unknown>): Promise<number> {
  try {
    await promise
  } catch (error) {
    const e = error as { statusCode?: number; status?: number }
    const status = e.statusCode ?? e.status
    if (typeof status === 'number') return status
    throw error
  }
  throw new Error('expected the call to fail')
}
