/**
 * Routes of the reference API that are not built answer 501 with a problem naming the route and
 * the docs section (not a 404 that reads as a typo), and the OpenAPI document lists them as such.
 */
import { expect, it } from 'vitest'
import { NOT_BUILT } from '../../adapters/http/not-built.js'
import { apiRouter } from '../../adapters/http/routes.js'
import { json, problem, setup } from './setup.js'

it('a reference route not built answers 501 naming the route and the docs section, with a key or without', async () => {
  const { call, keys } = await setup({ runner: null })
  const network = await problem(await call('GET', '/network-tokens/nt_1', { key: keys.full }), 501)
  expect(network.title).toBe('Not Implemented')
  expect(network.detail).toContain(
    'GET /network-tokens/nt_1 is a route of the reference API (network tokens)',
  )
  expect(network.detail).toContain('docs/server.md#routes-of-the-reference-not-built')
  await problem(await call('POST', '/3ds/sessions', { body: {} }), 501)
  await problem(await call('GET', '/enrichments/card-details'), 501)
})

it('a reference route beside a built path is 501; a method of no route on a built path is 405; an unknown path stays 404', async () => {
  const { call, keys } = await setup({ runner: null })
  const put = await problem(await call('PUT', '/tenants/self/owner', { key: keys.management, body: {} }), 501)
  expect(put.detail).toContain('PUT /tenants/self/owner')
  await problem(await call('POST', '/tenants/self', { key: keys.management, body: {} }), 405)
  await problem(await call('GET', '/no-such-thing', { key: keys.full }), 404)
})

it('no route of the list is built, and proxies, logs and webhooks (being built) are not in it', () => {
  const router = apiRouter()
  for (const [method, pattern] of NOT_BUILT) {
    const path = pattern.replace(/:\w+/g, 'x1')
    expect(router.match(method, path).kind, `${method} ${pattern}`).not.toBe('found')
    expect(pattern).not.toMatch(/^\/(proxy|proxies|logs|webhooks)(\/|$)/)
  }
})

it('/openapi.json lists each as not built, answering 501', async () => {
  const { call } = await setup({ runner: null })
  const doc = await json<{
    paths: Record<string, Record<string, { 'x-not-built'?: boolean; responses: Record<string, unknown> }>>
  }>(await call('GET', '/openapi.json'), 200)
  for (const [method, pattern] of NOT_BUILT) {
    const op = doc.paths[pattern.replace(/:(\w+)/g, '{$1}')]?.[method.toLowerCase()]
    expect(op?.['x-not-built'], `${method} ${pattern}`).toBe(true)
    expect(Object.keys(op!.responses)).toEqual(['501'])
  }
  expect(doc.paths['/tenants/self']?.['get']?.['x-not-built']).toBeUndefined()
})
