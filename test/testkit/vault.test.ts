import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { postgresStore } from '../../adapters/postgres/index.js'
import { type Fixture, ServiceError, type Store, unchecked } from '../../entry/index.js'
import { createTestVault, loadFixture } from '../../testing/vault.js'
import { needs } from '../environment.js'
import { PG_URL, testPool } from '../postgres/database.js'

/** A vault with a parent and three children linked out of id order, an open transaction, a session. */
async function populated(vault: Awaited<ReturnType<typeof createTestVault>>) {
  const client = vault.client()
  const parent = await client.tokens.create({ id: 'parent', type: 'token', data: { name: 'ann' } })
  for (const id of ['c3', 'c1', 'c2']) {
    await client.tokens.create({ id, type: 'token', data: id, metadata: { n: id } })
    await client.tokens.children.link(parent.id, id)
  }
  const tx = await client.transactions.create()
  await vault
    .client('private', { transactionId: tx.id })
    .tokens.create({ id: 'staged', type: 'token', data: 'in tx' })
  await vault.client('public').sessions.create()
  return { parent, tx }
}

const text = (value: unknown) => JSON.stringify(value)

describe('createTestVault', () => {
  it('is ready in one line: private reveals everything, public creates, management manages', async () => {
    const vault = await createTestVault()
    const token = await vault.client().tokens.create({ type: 'token', data: { number: '4242' } })
    expect((await vault.client().tokens.get(token.id)).data).toEqual({ number: '4242' })
    expect((await vault.client('public').tokens.create({ type: 'token', data: 'p' })).id).toBeTruthy()
    const apps = await vault.client('management').applications.list()
    expect(apps.data.map((a) => a.type).sort()).toEqual(['management', 'private', 'public'])
    const answer = await vault.http(
      new Request(`http://vault/tokens/${token.id}`, { headers: { 'SVC-API-KEY': vault.keys.private } }),
    )
    expect(answer.status).toBe(200)
    vault.clock.advance(1000)
    expect(vault.clock.now().toISOString()).toBe('2030-01-01T00:00:01.000Z')
    await vault.close()
  })

  it('snapshot → change → restore gives the same state again, byte for byte, link order and clock included', async () => {
    const vault = await createTestVault()
    const { tx } = await populated(vault)
    const before = await vault.snapshot()
    vault.clock.advance(60_000)
    await vault.client().tokens.delete('c1')
    await vault.client().tokens.create({ id: 'later', type: 'token', data: 'x' })
    await vault.service.admin.createTenant({ name: 'another' })
    expect(text(await vault.snapshot())).not.toBe(text(before))
    await vault.restore(before)
    expect(text(await vault.snapshot())).toBe(text(before))
    expect(vault.clock.now().toISOString()).toBe(before.clock)
    const children = await vault.client().tokens.children.list('parent')
    expect(children.data.map((t) => t.id)).toEqual(['c3', 'c1', 'c2'])
    expect((await vault.client().tokens.get('c1')).data).toBe('c1')
    // The open transaction's staged create came back with it (sealed again, still a create) and commits.
    expect(before.records.staged).toMatchObject([{ token_id: 'staged', creates: true }])
    await expect(vault.client().tokens.get('staged')).rejects.toMatchObject({ code: 'not_found' })
    await vault.client().transactions.commit(tx.id)
    expect((await vault.client().tokens.get('staged')).data).toBe('in tx')
    await vault.close()
  })

  it('reset goes back to the state right after creation: same keys, no tokens, same time', async () => {
    const vault = await createTestVault()
    await populated(vault)
    vault.clock.advance(3_600_000)
    await vault.reset()
    expect(vault.clock.now().toISOString()).toBe('2030-01-01T00:00:00.000Z')
    await expect(vault.client().tokens.get('parent')).rejects.toMatchObject({ code: 'not_found' })
    const again = await vault.client().tokens.create({ type: 'token', data: 'after reset' })
    expect((await vault.client().tokens.get(again.id)).data).toBe('after reset')
    await vault.close()
  })

  it('a snapshot of the memory store restores into the file store and PostgreSQL and back', async () => {
    const source = await createTestVault()
    await populated(source)
    const snapshot = await source.snapshot()
    const dir = await mkdtemp(join(tmpdir(), 'tokenvault-kit-'))
    const targets: { name: string; open: () => Promise<Store> }[] = [
      { name: 'file', open: () => fileStore({ path: dir }) },
    ]
    const database = needs(
      PG_URL !== undefined,
      'a PostgreSQL database (TOKENVAULT_PG_URL)',
      'eval "$(scripts/pg-test-server.sh start)"',
    )
    const pool = database && PG_URL ? testPool(PG_URL, 4) : undefined
    const schema = `tv_kit_${process.pid}_${Date.now()}`
    if (pool) targets.push({ name: 'postgres', open: () => postgresStore({ pool, schema }) })
    try {
      for (const target of targets) {
        const vault = await createTestVault({ store: await target.open() })
        await vault.restore(snapshot)
        expect(text(await vault.snapshot()), target.name).toBe(text(snapshot))
        // The snapshot's applications came along: the source's keys work here now.
        const there = vault.service.connect(source.keys.private)
        expect((await there.tokens.children.list('parent')).data.map((t) => t.id)).toEqual(['c3', 'c1', 'c2'])
        await there.tokens.create({ id: 'made-there', type: 'token', data: target.name })
        const back = await vault.snapshot()
        await source.restore(back)
        expect(text(await source.snapshot())).toBe(text(back))
        expect((await source.client().tokens.get('made-there')).data).toBe(target.name)
        await source.restore(snapshot)
        await vault.close()
      }
    } finally {
      await source.close()
      await rm(dir, { recursive: true, force: true })
      if (pool) {
        await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
        await pool.end()
      }
    }
  })

  it('refuses a malformed snapshot, naming the path, and changes nothing', async () => {
    const vault = await createTestVault()
    await populated(vault)
    const before = text(await vault.snapshot())
    const bad = JSON.parse(before)
    bad.records.tokens[1].id = 42
    const error = await vault.restore(bad).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ServiceError)
    expect(Object.keys((error as ServiceError).issues ?? {})).toEqual(['records.tokens.1.id'])
    expect(text(await vault.snapshot())).toBe(before)
    await vault.close()
  })
})

describe('fixtures', () => {
  const fixture: Fixture = {
    tenants: [
      {
        id: 'acme',
        name: 'Acme',
        applications: [
          {
            name: 'backend',
            type: 'private',
            key: 'key_backend_0123456789abcdefghij',
            permissions: ['token:create', 'token:read'],
            rules: [
              {
                description: 'all',
                priority: 1,
                container: '/',
                transform: 'reveal',
                permissions: ['token:read'],
              },
            ],
          },
        ],
        tokens: [
          { id: 'card-1', type: 'token', data: { number: '4242424242424242' } },
          { id: 'card-2', type: 'token', data: 'child' },
        ],
        associations: [{ parent_id: 'card-1', child_id: 'card-2' }],
        formulas: [
          {
            id: 'echo',
            name: 'echo',
            type: 'private',
            code: 'module.exports = async (req) => ({ raw: req.args })',
            configuration: [],
            request_parameters: [],
          },
        ],
        reactors: [{ name: 'echoer', formula_id: 'echo', configuration: {} }],
      },
    ],
  }

  it('loads tenants with fixed ids, applications with fixed keys, tokens with fixed ids, links, formulas and reactors', async () => {
    const vault = await createTestVault()
    const [tenant] = await loadFixture(vault.service, fixture)
    expect(tenant!.id).toBe('acme')
    const backend = vault.service.connect('key_backend_0123456789abcdefghij')
    expect((await backend.tokens.get('card-1')).data).toEqual({ number: '4242424242424242' })
    expect((await backend.tokens.children.list('card-1')).data.map((t) => t.id)).toEqual(['card-2'])
    await vault.close()
  })

  it('a load that fails part way changes nothing: the tenants it made are gone again', async () => {
    const vault = await createTestVault()
    await vault.client().tokens.create({ id: 'mine', type: 'token', data: 'kept' })
    const before = text(await vault.snapshot())
    const partly: Fixture = {
      tenants: [
        fixture.tenants[0]!,
        {
          id: 'second',
          name: 'Second',
          tokens: [
            { id: 't', type: 'token', data: 1 },
            { id: 't', type: 'token', data: 2 },
          ],
        },
      ],
    }
    const error = await loadFixture(vault.service, partly).catch((e: unknown) => e)
    expect(Object.keys((error as ServiceError).issues ?? {})).toEqual(['tenants.1.tokens.1'])
    expect(text(await vault.snapshot())).toBe(before)
    await expect(
      vault.service.connect('key_backend_0123456789abcdefghij').tokens.get('card-1'),
    ).rejects.toMatchObject({
      code: 'unauthenticated',
    })
    // The same fixture loads once fixed: nothing of the failed load was left to collide with.
    expect((await loadFixture(vault.service, fixture)).map((t) => t.id)).toEqual(['acme'])
    await vault.close()
  })

  it.each([
    [{ tenants: [{ name: 'x', tokenz: [] }] }, 'tenants.0.tokenz'],
    [
      { tenants: [{ name: 'x', tokens: [{ type: 'token', data: 'a' }, { type: 'token' }] }] },
      'tenants.0.tokens.1.',
    ],
    [
      { tenants: [{ name: 'x', applications: [{ name: 'a', type: 'privat', permissions: [] }] }] },
      'tenants.0.applications.0.',
    ],
    [
      { tenants: [{ name: 'x', associations: [{ parent_id: 'nope', child_id: 'nada' }] }] },
      'tenants.0.associations.0',
    ],
  ])('answers a bad entry with a validation error naming its path (%j)', async (bad, path) => {
    const vault = await createTestVault()
    const error = await unchecked(vault.service.admin)
      .loadFixture(bad)
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ServiceError)
    expect((error as ServiceError).code).toBe('validation_failed')
    expect(Object.keys((error as ServiceError).issues ?? {}).some((k) => k.startsWith(path))).toBe(true)
    await vault.close()
  })
})

afterAll(() => {})
