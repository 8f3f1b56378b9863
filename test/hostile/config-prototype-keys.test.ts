/**
 * A prototype key (`__proto__`, `constructor`, `prototype`) in a reactor's or a proxy's
 * configuration is a 400 naming `configuration`, as in metadata: it was dropped without a word
 * (the schema's record skips such keys) and the create answered 201.
 */
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'
import { failure } from '../core/setup.js'

async function setup() {
  const service = createService({
    store: memoryStore(),
    clock: manualClock('2030-01-01T00:00:00.000Z'),
    runner: null,
  })
  const tenant = await service.admin.createTenant({ name: 't' })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'm',
    type: 'management',
    permissions: ['reactor:create', 'reactor:read', 'reactor:update', 'proxy:create', 'proxy:update'],
  })
  return { service, client: service.connect(key) }
}

describe('configuration keys', () => {
  it('refuses __proto__, constructor and prototype in a reactor’s and a proxy’s configuration; others pass', async () => {
    const { service, client } = await setup()
    const code = 'module.exports = async () => ({})'
    const reactor = await client.reactors.create({ name: 'r', code, configuration: { a: 'b' } })
    const proxy = await client.proxies.create({
      name: 'p',
      destination_url: 'https://x.test',
      configuration: { a: 'b' },
    })
    for (const key of ['__proto__', 'constructor', 'prototype']) {
      // As JSON.parse makes it: an own key.
      const configuration = JSON.parse(`{"${key}": "x", "a": "b"}`) as Record<string, string>
      const calls = [
        () => client.reactors.create({ name: 'r', code, configuration }),
        () => client.reactors.update(reactor.id, { name: 'r', code, configuration }),
        () => client.reactors.patch(reactor.id, { configuration }),
        () => client.proxies.create({ name: 'p', destination_url: 'https://x.test', configuration }),
        () => client.proxies.patch(proxy.id, { configuration }),
      ]
      for (const call of calls) {
        const error = await failure(call())
        expect(error.code, key).toBe('validation_failed')
        expect(
          Object.keys(error.issues ?? {}).some((k) => k.startsWith('configuration')),
          key,
        ).toBe(true)
      }
    }
    expect((await client.reactors.get(reactor.id)).configuration).toEqual({ a: 'b' })
    await service.close()
  })
})
