import { describe, expect, it } from 'vitest'
import type { VaultEvent } from '../../entry/index.js'
import { createTestVault } from '../../testing/vault.js'
import { fakeRunner } from '../http/fake-runner.js'

describe('the operation journal', () => {
  it('records each operation with its actor and outcome, in-process and over HTTP, and fires Basis Theory events', async () => {
    const vault = await createTestVault()
    const events: VaultEvent[] = []
    const off = vault.service.on('event', (e) => events.push(e))
    const privateApp = (await vault.client('management').applications.list()).data.find(
      (a) => a.type === 'private',
    )!
    const token = await vault.client().tokens.create({ type: 'token', data: 'x' })
    await vault.client().tokens.update(token.id, { metadata: { a: '1' } })
    await vault.client().tokens.get(token.id)
    const session = await vault.client('public').sessions.create()
    await vault.client().sessions.authorize({ nonce: session.nonce, permissions: ['token:read'] })
    await vault.service.connect(session.session_key).tokens.get(token.id)
    await expect(vault.client().tokens.get('missing')).rejects.toThrow()
    await expect(
      vault.service.connect('key_not_a_real_key_000000000000').tokens.get(token.id),
    ).rejects.toThrow()
    const viaHttp = await vault.http(
      new Request(`http://vault/tokens/${token.id}`, {
        method: 'DELETE',
        headers: { 'SVC-API-KEY': vault.keys.private },
      }),
    )
    expect(viaHttp.status).toBe(204)
    off()
    await vault.client().tokens.create({ type: 'token', data: 'after off' })

    const entries = vault.service.journal.query({ since: '2030-01-01T00:00:00.000Z' })
    const summary = entries.map((e) => [
      e.operation,
      e.actor.kind,
      e.outcome.ok ? 'ok' : (e.outcome as { code: string }).code,
    ])
    expect(summary).toEqual(
      expect.arrayContaining([
        ['tenant.create', 'admin', 'ok'],
        ['application.create', 'admin', 'ok'],
        ['token.create', 'application', 'ok'],
        ['token.update', 'application', 'ok'],
        ['token.get', 'application', 'ok'],
        ['session.create', 'application', 'ok'],
        ['session.authorize', 'application', 'ok'],
        ['token.get', 'session', 'ok'],
        ['token.get', 'application', 'not_found'],
        ['token.get', 'unknown', 'unauthenticated'],
        ['token.delete', 'application', 'ok'],
      ]),
    )
    const created = entries.find((e) => e.operation === 'token.create')!
    expect(created).toMatchObject({
      tenant_id: vault.tenant.id,
      actor: { kind: 'application', id: privateApp.id },
      ids: [token.id],
    })
    expect(events.map((e) => e.type)).toEqual([
      'token.created',
      'token.updated',
      'session.created',
      'session.authorized',
      'token.deleted',
    ])
    expect(events[0]).toMatchObject({
      tenant_id: vault.tenant.id,
      ids: [token.id],
      at: '2030-01-01T00:00:00.000Z',
    })
    expect(vault.service.journal.query({ operation: 'token.delete' })).toHaveLength(1)
    expect(vault.service.journal.query({ tenant: 'another' })).toEqual([])
    vault.clock.advance(1000)
    await vault.client().tokens.create({ type: 'token', data: 'later' })
    expect(
      vault.service.journal.query({ since: '2030-01-01T00:00:01.000Z' }).map((e) => e.operation),
    ).toEqual(['token.create'])
    await vault.close()
  })

  it('records associations, transactions, formulas, reactors and applications, each with its event', async () => {
    const vault = await createTestVault({ runner: fakeRunner() })
    const events: string[] = []
    vault.service.on('event', (e) => events.push(e.type))
    const since = vault.service.journal.query().at(-1)!.seq
    const c = vault.client()
    const m = vault.client('management')
    const parent = await c.tokens.create({ type: 'token', data: 1 })
    const child = await c.tokens.children.create(parent.id, { type: 'token', data: 2 })
    await c.tokens.children.list(parent.id)
    await c.tokens.children.unlink(parent.id, child.id)
    await c.tokens.children.link(parent.id, child.id)
    const tx = await c.transactions.create()
    await vault.client('private', { transactionId: tx.id }).tokens.create({ type: 'token', data: 3 })
    await c.transactions.commit(tx.id)
    const tx2 = await c.transactions.create()
    await c.transactions.rollback(tx2.id)
    const formula = await m.reactorFormulas.create({
      name: 'f',
      type: 'private',
      code: 'module.exports = async () => ({})',
      configuration: [],
      request_parameters: [],
    })
    const reactor = await m.reactors.create({ name: 'r', formula: { id: formula.id }, configuration: {} })
    await m.reactors.update(reactor.id, { name: 'r2' })
    await expect(m.reactors.react(reactor.id, { args: {} })).rejects.toMatchObject({ code: 'forbidden' })
    await m.reactors.delete(reactor.id)
    await m.reactorFormulas.delete(formula.id)
    const app = await m.applications.create({ name: 'x', type: 'public', permissions: ['token:create'] })
    await m.applications.update(app.id, { name: 'y', permissions: ['token:create'] })
    await m.applications.delete(app.id)
    const entries = vault.service.journal.query().filter((e) => e.seq > since)
    expect(entries.every((e) => e.actor.kind === 'application' && e.tenant_id === vault.tenant.id)).toBe(true)
    expect(
      entries.map((e) => `${e.operation}:${e.outcome.ok ? 'ok' : (e.outcome as { code: string }).code}`),
    ).toEqual([
      'token.create:ok',
      'token.child.create:ok',
      'token.child.list:ok',
      'token.child.unlink:ok',
      'token.child.link:ok',
      'transaction.create:ok',
      'token.create:ok',
      'transaction.commit:ok',
      'transaction.create:ok',
      'transaction.rollback:ok',
      'reactor_formula.create:ok',
      'reactor.create:ok',
      'reactor.update:ok',
      'reactor.react:forbidden',
      'reactor.delete:ok',
      'reactor_formula.delete:ok',
      'application.create:ok',
      'application.update:ok',
      'application.delete:ok',
    ])
    expect(entries.find((e) => e.operation === 'token.child.link')!.ids).toEqual([parent.id])
    expect(entries.find((e) => e.operation === 'reactor.update')!.actor).toEqual({
      kind: 'application',
      id: vault.applications.management.id,
    })
    expect(events).toEqual([
      'token.created',
      'token.child.created',
      'transaction.created',
      'token.created',
      'transaction.committed',
      'transaction.created',
      'transaction.rolled_back',
      'reactor_formula.created',
      'reactor.created',
      'reactor.updated',
      'reactor.deleted',
      'reactor_formula.deleted',
      'application.created',
      'application.updated',
      'application.deleted',
    ])
    await vault.close()
  })

  it('journals every method of the client under its operation name', async () => {
    const vault = await createTestVault()
    const since = vault.service.journal.query().at(-1)!.seq
    const client = vault.service.connect('key_not_a_real_key_000000000000')
    // Every call fails to authenticate, and each is journaled under its operation's name.
    const calls: string[] = []
    const callAll = async (area: object, path: string) => {
      for (const [name, member] of Object.entries(area)) {
        if (typeof member !== 'function') {
          await callAll(member, `${path}${name}.`)
          continue
        }
        calls.push(`${path}${name}`)
        await expect(member('a', 'b')).rejects.toMatchObject({ code: 'unauthenticated' })
      }
    }
    await callAll(client, '')
    const operations = vault.service.journal
      .query()
      .filter((e) => e.seq > since)
      .map((e) => e.operation)
    expect(Object.fromEntries(calls.map((call, i) => [call, operations[i]]))).toEqual({
      'tokens.create': 'token.create',
      'tokens.tokenize': 'token.tokenize',
      'tokens.detokenize': 'token.detokenize',
      'tokens.list': 'token.list',
      'tokens.listV2': 'token.list_v2',
      'tokens.search': 'token.search',
      'tokens.searchV2': 'token.search_v2',
      'tokens.get': 'token.get',
      'tokens.update': 'token.update',
      'tokens.delete': 'token.delete',
      'tokens.children.link': 'token.child.link',
      'tokens.children.unlink': 'token.child.unlink',
      'tokens.children.create': 'token.child.create',
      'tokens.children.list': 'token.child.list',
      'transactions.create': 'transaction.create',
      'transactions.commit': 'transaction.commit',
      'transactions.rollback': 'transaction.rollback',
      'sessions.create': 'session.create',
      'sessions.authorize': 'session.authorize',
      'applications.create': 'application.create',
      'applications.list': 'application.list',
      'applications.get': 'application.get',
      'applications.getByKey': 'application.get_by_key',
      'applications.update': 'application.update',
      'applications.regenerateKey': 'application.regenerate_key',
      'applications.delete': 'application.delete',
      'reactorFormulas.create': 'reactor_formula.create',
      'reactorFormulas.list': 'reactor_formula.list',
      'reactorFormulas.get': 'reactor_formula.get',
      'reactorFormulas.update': 'reactor_formula.update',
      'reactorFormulas.delete': 'reactor_formula.delete',
      'reactors.create': 'reactor.create',
      'reactors.list': 'reactor.list',
      'reactors.get': 'reactor.get',
      'reactors.update': 'reactor.update',
      'reactors.patch': 'reactor.patch',
      'reactors.delete': 'reactor.delete',
      'reactors.react': 'reactor.react',
      'reactors.reactAsync': 'reactor.react_async',
      'reactors.result': 'reactor.result',
      'applicationKeys.create': 'application_key.create',
      'applicationKeys.list': 'application_key.list',
      'applicationKeys.get': 'application_key.get',
      'applicationKeys.delete': 'application_key.delete',
      'tenants.self': 'tenant.self',
      'tenants.update': 'tenant.update',
      'tenants.delete': 'tenant.delete',
      'tenants.usageReport': 'tenant.usage_report',
      'permissions.list': 'permission.list',
      'applicationTemplates.list': 'application_template.list',
      'applicationTemplates.get': 'application_template.get',
      'roles.list': 'role.list',
      'tokenIntents.create': 'token_intent.create',
      'tokenIntents.get': 'token_intent.get',
      'tokenIntents.delete': 'token_intent.delete',
      'proxies.create': 'proxy.create',
      'proxies.list': 'proxy.list',
      'proxies.get': 'proxy.get',
      'proxies.update': 'proxy.update',
      'proxies.patch': 'proxy.patch',
      'proxies.delete': 'proxy.delete',
      'proxy.invoke': 'proxy.invoke',
      'documents.upload': 'document.upload',
      'documents.get': 'document.get',
      'documents.data': 'document.data',
      'documents.delete': 'document.delete',
      'logs.list': 'log.list',
      'logs.entityTypes': 'log.entity_types',
      'webhooks.create': 'webhook.create',
      'webhooks.list': 'webhook.list',
      'webhooks.get': 'webhook.get',
      'webhooks.update': 'webhook.update',
      'webhooks.delete': 'webhook.delete',
      'webhooks.eventTypes': 'webhook.event_types',
      'webhooks.ping': 'webhook.ping',
      'keys.create': 'key.create',
      'keys.list': 'key.list',
      'keys.get': 'key.get',
      'keys.delete': 'key.delete',
    })
    expect(operations).toHaveLength(calls.length)
    await vault.close()
  })

  it('holds no token data, key, nonce or session key', async () => {
    const vault = await createTestVault()
    const secret = 'PLANTED-SECRET-4242424242424242'
    const token = await vault
      .client()
      .tokens.create({ type: 'token', data: { number: secret }, metadata: { m: 'fine' } })
    await vault.client().tokens.update(token.id, { data: { number: `${secret}-2` } })
    const session = await vault.client('public').sessions.create()
    await vault.client().sessions.authorize({ nonce: session.nonce, permissions: ['token:read'] })
    await vault.service.connect(session.session_key).tokens.get(token.id)
    await vault.http(
      new Request('http://vault/tokens', {
        method: 'POST',
        headers: { 'SVC-API-KEY': vault.keys.private, 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'token', data: secret }),
      }),
    )
    const text = JSON.stringify(vault.service.journal.query())
    for (const value of [
      secret,
      session.nonce,
      session.session_key,
      vault.keys.private,
      vault.keys.public,
      vault.keys.management,
    ]) {
      expect(text).not.toContain(value)
    }
    expect(text).toContain(token.id)
    await vault.close()
  })

  it('keeps only the newest journalSize entries', async () => {
    const vault = await createTestVault({ journalSize: 5 })
    for (let i = 0; i < 20; i++) await vault.client().tokens.create({ type: 'token', data: `${i}` })
    const entries = vault.service.journal.query()
    expect(entries).toHaveLength(5)
    // 4 set-up calls (the tenant, 3 applications), then 20 creates: the last 5 of 24.
    expect(entries.map((e) => e.seq)).toEqual([20, 21, 22, 23, 24])
    vault.service.journal.clear()
    expect(vault.service.journal.query()).toEqual([])
    await vault.close()
  })

  it('keeps every id an entry touched through evictions, and answers copies a caller cannot change it through', async () => {
    const vault = await createTestVault({ journalSize: 7 })
    const parent = await vault.client().tokens.create({ type: 'token', data: 'parent' })
    const children: string[] = []
    // 40 entries through a journal of 7: its front is dropped and its storage compacted many times.
    for (let i = 0; i < 40; i++) {
      children.push(
        (await vault.client().tokens.children.create(parent.id, { type: 'token', data: `${i}` })).id,
      )
    }
    await expect(vault.client().tokens.get('missing')).rejects.toThrow()
    const entries = vault.service.journal.query()
    expect(entries.map((e) => [e.operation, e.ids, e.outcome])).toEqual([
      ...children.slice(-6).map((child) => ['token.child.create', [parent.id, child], { ok: true }]),
      ['token.get', ['missing'], { ok: false, code: 'not_found' }],
    ])
    const before = structuredClone(entries)
    entries[0]!.ids.push('forged')
    entries[0]!.actor.kind = 'admin'
    entries[0]!.outcome = { ok: false, code: 'forged' }
    entries[6]!.seq = 1
    expect(vault.service.journal.query()).toEqual(before)
    await vault.close()
  })
})
