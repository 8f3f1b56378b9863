import { randomBytes } from 'node:crypto'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import autocannon from 'autocannon'
import { describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { serve } from '../../bin/serve.js'
import { FORMULA_CODE } from './world.js'

const LONG = process.env.TOKENVAULT_LONG === '1'
/**
 * Seconds of load: a short run in every `npm test` (kept short because vitest runs other files
 * beside it on the same cores), a 5-minute soak in long mode, or `TOKENVAULT_LOAD_SECONDS`.
 */
const SECONDS = Number(process.env.TOKENVAULT_LOAD_SECONDS ?? (LONG ? 300 : 8))

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void
const heapAfterGc = () => {
  gc()
  gc()
  return process.memoryUsage().heapUsed
}

/** Every file under `dir`, read as text. */
function filesUnder(dir: string): { path: string; text: string }[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? filesUnder(path) : [{ path, text: readFileSync(path, 'latin1') }]
  })
}

describe('load on the CLI server over the file store', () => {
  it(
    `mixed workload at 50 connections for ${SECONDS} s: only 2xx, no leak, every acknowledged write survives a restart, no secret on disk or in logs`,
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'tokenvault-load-'))
      const printed: string[] = []
      const logs: string[] = []
      const server = await serve({
        port: 0,
        host: '127.0.0.1',
        store: `file:${dir}`,
        // Every request on the main thread, as measured before the heavy lane (test/cli/heavy-lane.test.ts).
        heavyLane: false,
        headerPrefix: 'SVC',
        masterKey: randomBytes(32),
        print: (line) => printed.push(line),
        log: (line) => logs.push(line),
      })
      try {
        const managementKey = printed
          .find((l) => l.startsWith('management key: '))!
          .slice('management key: '.length)
        const call = async (method: string, path: string, key: string, body?: unknown) => {
          const response = await fetch(`${server.url}${path}`, {
            method,
            headers: { 'svc-api-key': key, 'content-type': 'application/json' },
            ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          })
          const text = await response.text()
          if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`)
          return text ? JSON.parse(text) : undefined
        }
        const perms = ['token:create', 'token:read', 'token:update', 'token:delete', 'token:use']
        const priv = await call('POST', '/applications', managementKey, {
          name: 'load',
          type: 'private',
          permissions: perms,
          rules: [
            { description: 'all', priority: 1, container: '/', transform: 'reveal', permissions: perms },
          ],
        })
        const pub = await call('POST', '/applications', managementKey, {
          name: 'web',
          type: 'public',
          permissions: ['token:create'],
        })
        const formula = await call('POST', '/reactor-formulas', managementKey, {
          name: 'echo',
          type: 'private',
          code: FORMULA_CODE,
          configuration: [],
          request_parameters: [],
        })
        const reactor = await call('POST', '/reactors', managementKey, {
          name: 'echo',
          formula_id: formula.id,
          configuration: {},
        })
        const parent = await call('POST', '/tokens', priv.key, { type: 'parent', data: 'p' })

        const acknowledged: string[] = []
        const sessionSecrets: string[] = []
        const secretData = 'load-secret-value'
        const headers = (key: string) => ({ 'svc-api-key': key, 'content-type': 'application/json' })
        type Ctx = { tokenId?: string; nonce?: string }
        const run = (duration: number) =>
          autocannon({
            url: server.url,
            connections: 50,
            duration,
            requests: [
              {
                method: 'POST',
                path: '/tokens',
                headers: headers(priv.key),
                body: JSON.stringify({ type: 'token', data: { v: secretData }, metadata: { k: 'v' } }),
                onResponse: (status: number, body: string, context: Ctx) => {
                  if (status === 201) {
                    context.tokenId = JSON.parse(body).id
                    acknowledged.push(context.tokenId!)
                  }
                },
              },
              {
                method: 'GET',
                headers: headers(priv.key),
                setupRequest: (req: { path: string }, context: Ctx) => ({
                  ...req,
                  path: `/tokens/${context.tokenId}`,
                }),
              },
              {
                method: 'POST',
                headers: headers(priv.key),
                setupRequest: (req: { path: string }, context: Ctx) => ({
                  ...req,
                  path: `/tokens/${parent.id}/children/${context.tokenId}`,
                }),
              },
              { method: 'GET', path: `/tokens/${parent.id}/children?size=20`, headers: headers(priv.key) },
              {
                method: 'POST',
                path: '/sessions',
                headers: headers(pub.key),
                onResponse: (status: number, body: string, context: Ctx) => {
                  if (status !== 201) return
                  const created = JSON.parse(body)
                  context.nonce = created.nonce
                  if (sessionSecrets.length < 100) sessionSecrets.push(created.nonce, created.session_key)
                },
              },
              {
                method: 'POST',
                path: '/sessions/authorize',
                headers: headers(priv.key),
                setupRequest: (req: object, context: Ctx) => ({
                  ...req,
                  body: JSON.stringify({ nonce: context.nonce, permissions: ['token:read'] }),
                }),
              },
              {
                method: 'POST',
                path: `/reactors/${reactor.id}/react`,
                headers: headers(priv.key),
                body: JSON.stringify({ args: { n: 1 } }),
              },
            ],
          } as autocannon.Options)

        const warm = await run(2)
        expect(warm.non2xx).toBe(0)
        const heapBefore = heapAfterGc()
        const ackedBefore = acknowledged.length
        const result = await run(SECONDS)
        const heapAfter = heapAfterGc()
        expect(result.errors).toBe(0)
        expect(result.timeouts).toBe(0)
        expect(result.non2xx).toBe(0)
        // Enough load to mean something even on a shared machine at load 19 (484 there, thousands quiet).
        expect(result['2xx']).toBeGreaterThan(200)
        // The heap may grow by what was stored (tokens, links, sessions: well under 3 KiB each), not more.
        const stored = (acknowledged.length - ackedBefore) * 3 * 3072
        expect(heapAfter).toBeLessThan(heapBefore * 1.2 + stored)

        // Secrets: no key, nonce or token data in the request log.
        const logText = logs.join('\n')
        expect(logs.length).toBeGreaterThan(result['2xx'])
        for (const secret of [managementKey, priv.key, pub.key, secretData])
          expect(logText).not.toContain(secret)

        await server.close()
        // No plaintext key on disk (only SHA-256 hashes).
        const onDisk = filesUnder(dir)
        expect(onDisk.length).toBeGreaterThan(0)
        for (const file of onDisk) {
          for (const secret of [managementKey, priv.key, pub.key])
            expect(file.text.includes(secret), file.path).toBe(false)
        }
        // After a restart every acknowledged token is there.
        const reopened = await fileStore({ path: dir })
        const missing: string[] = []
        for (const id of acknowledged) if (!(await reopened.getToken(priv.tenant_id, id))) missing.push(id)
        await reopened.close()
        expect(missing).toEqual([])
        expect(acknowledged.length).toBeGreaterThan(100)
      } finally {
        await server.close()
        await rm(dir, { recursive: true, force: true })
      }
    },
    (SECONDS + 60) * 1000,
  )
})
