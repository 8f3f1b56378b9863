/**
 * Against `npm start` (the CLI, from source): node-sdk 5's `client.webhooks.*` unmodified, a
 * loopback receiver getting a token create's delivery within 1 s and verifying it the documented
 * way; and SIGKILL with deliveries pending (the receiver answering 500): after a restart on the same
 * file store every one arrives, duplicates only as at-least-once allows (counted); the same for the
 * events of calls that write nothing of their own (a proxy call's, a token read's).
 */
import { constants, createVerify, generateKeyPairSync } from 'node:crypto'
import { once } from 'node:events'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BasisTheoryClient } from '@basis-theory/node-sdk'
import stringify from 'fast-json-stable-stringify'
import { afterEach, describe, expect, it } from 'vitest'
import { TEST_WEBHOOK_PUBLIC_KEY } from '../../src/webhooks/index.js'
import { start } from '../cli/spawn.js'

/** A key of its own in a file, as `--webhook-signing-key-file` reads it; and its public half. */
function signingKeyFile(): { file: string; publicKey: string } {
  const file = join(mkdtempSync(join(tmpdir(), 'tv-webhook-key-')), 'signing.pem')
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  writeFileSync(file, privateKey.export({ type: 'pkcs8', format: 'pem' }))
  return { file, publicKey: publicKey.export({ type: 'spki', format: 'pem' }).toString() }
}

interface Got {
  at: number
  path: string
  body: string
  signature: string
}

/** A receiver on 127.0.0.1 answering `status()`; what it got, with when. */
async function receiver(status: () => number) {
  const got: Got[] = []
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', () => {
      got.push({
        at: Date.now(),
        path: req.url ?? '',
        body: Buffer.concat(chunks).toString(),
        signature: String(req.headers['bt-signature']),
      })
      res.statusCode = status()
      res.end()
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return { got, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }
}

const servers: Server[] = []
afterEach(() => {
  for (const s of servers.splice(0)) s.close()
})

/** The reference's verification of a delivery under `publicKey`. */
const verified = (publicKey: string) => (g: Got) => {
  const verifier = createVerify('SHA256')
  verifier.update(stringify(JSON.parse(g.body)))
  return verifier.verify(
    { key: publicKey, padding: constants.RSA_PKCS1_PSS_PADDING },
    Buffer.from(g.signature, 'base64'),
  )
}

async function until(check: () => boolean, ms: number) {
  const end = Date.now() + ms
  while (!check() && Date.now() < end) await new Promise((r) => setTimeout(r, 20))
  return check()
}

/**
 * A loopback receiver answering 500, and `serve` on a file store in a new directory, its egress
 * that receiver; `killedAndRestarted` kills it and starts it again there, the receiver answering 200.
 */
async function serveToFailingReceiver(prefix: string) {
  const receiving = { answer: 500 }
  const r = await receiver(() => receiving.answer)
  servers.push(r.server)
  const dir = mkdtempSync(join(tmpdir(), prefix))
  const args = ['serve', '--port', '0', '--store', `file:${join(dir, 'store')}`, '--log', 'none']
  const env = { TOKENVAULT_REACTOR_EGRESS: r.origin }
  const first = start(args, dir, env)
  const url = (await first.line(1)).slice('listening on '.length)
  const management = (await first.line(2)).slice('management key: '.length)
  /** SIGKILLs the first process, lets the receiver answer 200, starts the store again: what it got before. */
  const killedAndRestarted = async () => {
    first.child.kill('SIGKILL')
    await first.exited
    receiving.answer = 200
    const before = r.got.length
    const second = start(args, dir, env)
    await second.line(1)
    return { second, before }
  }
  return { r, dir, first, url, management, killedAndRestarted }
}

describe('webhooks against the CLI', () => {
  it('node-sdk 5 manages webhooks; a token create is delivered to a loopback receiver within 1 s, signed', async () => {
    const r = await receiver(() => 200)
    servers.push(r.server)
    const key = signingKeyFile()
    const cli = start(
      ['serve', '--port', '0', '--store', 'memory', '--log', 'none', '--header-prefix', 'BT'],
      undefined,
      {
        TOKENVAULT_REACTOR_EGRESS: r.origin,
        TOKENVAULT_WEBHOOK_SIGNING_KEY_FILE: key.file,
      },
    )
    const url = (await cli.line(1)).slice('listening on '.length)
    const management = (await cli.line(2)).slice('management key: '.length)
    const bt = new BasisTheoryClient({ apiKey: management, baseUrl: url, maxRetries: 0 })
    const hook = await bt.webhooks.create({ name: 'hook', url: `${r.origin}/in`, events: ['token:created'] })
    expect(hook).toMatchObject({ name: 'hook', status: 'enabled', events: ['token.created'] })
    expect((await bt.webhooks.get(hook.id)).id).toBe(hook.id)
    expect((await bt.webhooks.list()).data?.map((w) => w.id)).toEqual([hook.id])
    expect(await bt.webhooks.events.list()).toContain('token.created')
    await bt.webhooks.ping()
    await bt.webhooks.update(hook.id, { name: 'hook 2', url: `${r.origin}/in`, events: ['token.created'] })
    const app = await bt.applications.create({ name: 'w', type: 'private', permissions: ['token:create'] })
    const writer = new BasisTheoryClient({ apiKey: app.key!, baseUrl: url, maxRetries: 0 })
    const sent = Date.now()
    const token = await writer.tokens.create({ type: 'token', data: 'hello' })
    expect(await until(() => r.got.length > 0, 1000)).toBe(true)
    expect(r.got[0]!.at - sent).toBeLessThan(1000)
    expect(JSON.parse(r.got[0]!.body).event).toMatchObject({
      type: 'token.created',
      data: { token: { id: token.id } },
    })
    expect(verified(key.publicKey)(r.got[0]!)).toBe(true)
    expect(verified(TEST_WEBHOOK_PUBLIC_KEY)(r.got[0]!)).toBe(false)
    await bt.webhooks.delete(hook.id)
    cli.child.kill('SIGTERM')
    await cli.exited
  })

  it('SIGKILL with deliveries pending (receiver answering 500): after restart every one arrives', async () => {
    // The master key and the signing key: ./.tokenvault.key and ./.tokenvault-webhook-signing.pem
    // in `dir`, made on the first start and read on the second.
    const { r, dir, first, url, management, killedAndRestarted } =
      await serveToFailingReceiver('tv-webhooks-')
    const call = async (key: string, path: string, body: unknown) =>
      (
        await fetch(`${url}${path}`, {
          method: 'POST',
          headers: { 'SVC-API-KEY': key, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
      ).json() as Promise<{ id: string; key: string }>
    await call(management, '/webhooks', { name: 'h', url: `${r.origin}/in`, events: ['token.created'] })
    const app = await call(management, '/applications', {
      name: 'w',
      type: 'private',
      permissions: ['token:create'],
    })
    const made: string[] = []
    for (let i = 0; i < 20; i++)
      made.push((await call(app.key, '/tokens', { type: 'token', data: `t${i}` })).id)
    expect(await until(() => r.got.length >= 20, 5000)).toBe(true)
    expect(first.stderr()).toMatch(
      /webhook signing key: created .*\.tokenvault-webhook-signing\.pem \(0600\)/,
    )
    const printed = start(['webhooks', 'public-key'], dir)
    await printed.exited
    const publicKey = printed.lines.join('\n')
    expect(publicKey).toMatch(/^-----BEGIN PUBLIC KEY-----/)
    expect(r.got.every(verified(publicKey))).toBe(true)
    const { second, before } = await killedAndRestarted()
    // The first attempts failed 10 s before; the restarted process retries when each back-off ends.
    expect(
      await until(
        () => new Set(r.got.slice(before).map((g) => JSON.parse(g.body).event.data.token.id)).size === 20,
        30_000,
      ),
    ).toBe(true)
    const delivered = r.got.slice(before).map((g) => JSON.parse(g.body).event.data.token.id as string)
    expect(new Set(delivered)).toEqual(new Set(made))
    // At least once: duplicates only from attempts the kill interrupted (counted, bounded by the 20).
    expect(delivered.length - 20).toBeLessThanOrEqual(20)
    // Signed after the restart with the same key: the one printed before it.
    expect(second.stderr()).toMatch(/webhook signing key: using /)
    expect(r.got.slice(before).every(verified(publicKey))).toBe(true)
    second.child.kill('SIGTERM')
    await second.exited
  }, 60_000)

  it("SIGKILL with a call's events pending (proxy.invoked, token.read; receiver answering 500): after restart each arrives", async () => {
    const { r, url, management, killedAndRestarted } = await serveToFailingReceiver('tv-call-events-')
    const call = async (key: string, method: string, path: string, body?: unknown, headers = {}) =>
      fetch(`${url}${path}`, {
        method,
        headers: { 'SVC-API-KEY': key, 'content-type': 'application/json', ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
    const json = async (response: Promise<Response>) =>
      (await response).json() as Promise<{ id: string; key: string }>
    const events = ['proxy.invoked', 'token.read']
    await json(call(management, 'POST', '/webhooks', { name: 'h', url: `${r.origin}/in`, events }))
    const app = await json(
      call(management, 'POST', '/applications', {
        name: 'w',
        type: 'private',
        permissions: ['token:create', 'token:read', 'token:use'],
      }),
    )
    const token = await json(call(app.key, 'POST', '/tokens', { type: 'token', data: 'x' }))
    for (let i = 0; i < 5; i++) {
      const proxied = await call(app.key, 'POST', '/proxy', { n: i }, { 'SVC-PROXY-URL': `${r.origin}/dest` })
      expect(proxied.status).toBe(500)
      expect((await call(app.key, 'GET', `/tokens/${token.id}`)).status).toBe(200)
    }
    const deliveries = () => r.got.filter((g) => g.path === '/in')
    // Each event's first attempt failed (500): all ten are pending in the store.
    expect(await until(() => deliveries().length >= 10, 5000)).toBe(true)
    const { second, before } = await killedAndRestarted()
    const ids = () =>
      new Set(
        r.got
          .slice(before)
          .filter((g) => g.path === '/in')
          .map((g) => JSON.parse(g.body).event.id),
      )
    expect(await until(() => ids().size === 10, 30_000)).toBe(true)
    const types = r.got
      .slice(before)
      .filter((g) => g.path === '/in')
      .map((g) => JSON.parse(g.body).event.type as string)
    expect(types.filter((t) => t === 'proxy.invoked').length).toBeGreaterThanOrEqual(5)
    expect(types.filter((t) => t === 'token.read').length).toBeGreaterThanOrEqual(5)
    second.child.kill('SIGTERM')
    await second.exited
  }, 60_000)
})
