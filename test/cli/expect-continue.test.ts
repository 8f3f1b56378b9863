/**
 * `serve`'s listener answers `Expect: 100-continue` when the body is wanted: a bad key's request is
 * refused (401) without inviting its body; a good key's gets `100 Continue`, then its answer.
 */
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { connect } from 'node:net'
import { afterAll, expect, it } from 'vitest'
import { createHttpHandler, toNodeListener } from '../../adapters/http/index.js'
import { drainingServer } from '../../bin/drain.js'
import { createTestVault } from '../../testing/vault.js'

const closers: (() => void)[] = []
afterAll(() => {
  for (const close of closers) close()
})

/** Sends `head` and answers what came back within `waitMs`, and the socket to go on with. */
async function send(port: number, head: string, waitMs = 300) {
  const socket = connect(port, '127.0.0.1')
  let data = ''
  socket.on('data', (d) => {
    data += d
  })
  socket.on('error', () => {})
  await once(socket, 'connect')
  socket.write(head)
  await new Promise((resolve) => setTimeout(resolve, waitMs))
  return { socket, data: () => data }
}

it('refuses a bad key before inviting the body; a good key gets 100 Continue, then 201', async () => {
  const vault = await createTestVault()
  const { server } = drainingServer(toNodeListener(createHttpHandler(vault.service)))
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  closers.push(() => {
    server.closeAllConnections()
    server.close()
  })
  const port = (server.address() as AddressInfo).port
  const body = JSON.stringify({ type: 'token', data: 'x' })
  const head = (key: string) =>
    `POST /tokens HTTP/1.1\r\nHost: x\r\nSVC-API-KEY: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`
  const bad = await send(port, head('key_not_a_real_one'))
  expect(bad.data()).toMatch(/^HTTP\/1\.1 401 /)
  expect(bad.data()).not.toContain('100 Continue')
  bad.socket.destroy()
  const good = await send(port, head(vault.keys.private))
  expect(good.data()).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\n$/)
  good.socket.write(body)
  for (let i = 0; i < 50 && !good.data().includes('201'); i++) await new Promise((r) => setTimeout(r, 20))
  expect(good.data()).toMatch(/HTTP\/1\.1 201 /)
  good.socket.destroy()
})
