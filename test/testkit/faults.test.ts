import { expect, it } from 'vitest'
import { createTestVault } from '../../testing/index.js'

const create = (key: string) =>
  new Request('http://vault/tokens', {
    method: 'POST',
    headers: { 'BT-API-KEY': key, 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'token', data: 'x' }),
  })

it('vault.faults makes the next matching requests of vault.http fail, then lets them through', async () => {
  const vault = await createTestVault()
  const fault = vault.faults.add({ method: 'POST', path: '/tokens', status: 503, times: 2 })
  expect(fault).toMatchObject({ method: 'POST', path: '/tokens', status: 503, times_left: 2 })
  for (let i = 0; i < 2; i++) {
    const failed = await vault.http(create(vault.keys.private))
    expect(failed.status).toBe(503)
    expect(failed.headers.get('retry-after')).toBe('1')
    expect(failed.headers.get('content-type')).toBe('application/problem+json')
    expect(await failed.json()).toMatchObject({ status: 503, title: 'Service Unavailable' })
  }
  expect(vault.faults.list()).toEqual([])
  expect((await vault.http(create(vault.keys.private))).status).toBe(201)
  // Nothing was written by the failed requests.
  expect((await vault.client().tokens.list()).pagination.total_items).toBe(1)
  await vault.close()
})

it('a fault matches its method and route pattern only; reset() clears the faults', async () => {
  const vault = await createTestVault()
  await vault.client().tokens.create({ id: 't1', type: 'token', data: 'x' })
  vault.faults.add({ method: 'GET', path: '/tokens/{id}', status: 429, times: 5 })
  const get = () =>
    vault.http(new Request('http://vault/tokens/t1', { headers: { 'BT-API-KEY': vault.keys.private } }))
  expect((await get()).status).toBe(429)
  expect((await vault.http(create(vault.keys.private))).status).toBe(201)
  expect(
    (await vault.http(new Request('http://vault/tokens', { headers: { 'BT-API-KEY': vault.keys.private } })))
      .status,
  ).toBe(200)
  expect(vault.faults.list()).toMatchObject([{ times_left: 4 }])
  await vault.reset()
  expect(vault.faults.list()).toEqual([])
  expect((await get()).status).toBe(404)
  await vault.close()
})

it('faults apply to vault.listen() too, and bad faults are refused without changing anything', async () => {
  const vault = await createTestVault()
  const { url } = await vault.listen()
  vault.faults.add({ path: '/healthz', status: 500 })
  expect((await fetch(`${url}/healthz`)).status).toBe(500)
  expect((await fetch(`${url}/healthz`)).status).toBe(200)
  expect(() => vault.faults.add({ path: 'tokens', status: 200 })).toThrow(/path, status/)
  expect(() => vault.faults.add({ path: '/tokens' })).toThrow(/status/)
  expect(vault.faults.list()).toEqual([])
  await vault.close()
})

it('a delay-only fault slows the request, then it is answered by the vault', async () => {
  const vault = await createTestVault()
  vault.faults.add({ path: '/healthz', delay_ms: 50 })
  const started = performance.now()
  const answer = await vault.http(new Request('http://vault/healthz'))
  expect(answer.status).toBe(200)
  expect(performance.now() - started).toBeGreaterThanOrEqual(45)
  await vault.close()
})
