import { expect, it } from 'vitest'
import { createTestVault } from '../../testing/index.js'

it('vault.listen() serves the API on a real port and close() stops it; vault.close() stops the rest', async () => {
  const vault = await createTestVault()
  await vault.client().tokens.create({ id: 'l1', type: 'token', data: 'over a socket' })
  const { url, close } = await vault.listen()
  expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
  const read = await fetch(`${url}/tokens/l1`, { headers: { 'BT-API-KEY': vault.keys.private } })
  expect(await read.json()).toMatchObject({ id: 'l1', data: 'over a socket' })
  await close()
  await expect(fetch(`${url}/healthz`)).rejects.toThrow()
  const second = await vault.listen()
  expect((await fetch(`${second.url}/healthz`)).status).toBe(200)
  await vault.close()
  await expect(fetch(`${second.url}/healthz`)).rejects.toThrow()
})
