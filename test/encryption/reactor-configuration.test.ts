import { randomBytes } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { unchecked } from '../../entry/index.js'
import { createTestVault } from '../../testing/vault.js'
import { failure, formulaBody, sharedRunner, world } from '../formulas/setup.js'

/**
 * Reactor configuration holds third parties' secrets (the API keys formulas call services with):
 * it is sealed before any store sees it, as token data is, and read back opened.
 */
const runner = sharedRunner()
afterAll(() => runner.close())

const API_KEY = `sk_live_${randomBytes(8).toString('hex')}`
const OTHER_KEY = `sk_test_${randomBytes(8).toString('hex')}`
const SETTING = 'vendor_api_key_setting'
const ECHO_CONFIG = 'module.exports = async function (req) { return { raw: { seen: req.configuration } } }'

/** Every form of a secret an attacker could grep a dump for. */
const forms = (value: string) => [
  value,
  Buffer.from(value).toString('base64').slice(0, 12),
  Buffer.from(value).toString('hex'),
]

async function withReactor() {
  const w = await world({ runner: runner.get() })
  const formula = await w.a.admin.reactorFormulas.create(
    formulaBody({
      code: ECHO_CONFIG,
      configuration: [{ name: SETTING, type: 'string' }],
      request_parameters: [],
    }),
  )
  const reactor = await w.a.admin.reactors.create({
    name: 'vendor',
    formula_id: formula.id,
    configuration: { [SETTING]: API_KEY },
  })
  const dumped = async () => JSON.stringify(await w.store.dump())
  return { ...w, formula, reactor, dumped }
}

describe('reactor configuration is sealed at rest', () => {
  it("the store holds no configuration value, nor its name in the reactor's record; reads and reacts see it", async () => {
    const { a, store, reactor, dumped } = await withReactor()
    const raw = await dumped()
    expect(raw).toContain('$sealed')
    for (const needle of forms(API_KEY)) expect(raw, needle).not.toContain(needle)
    // The setting's name is the formula's declaration (in the clear); the reactor's record hides it too.
    const stored = JSON.stringify(await store.getReactor(reactor.tenant_id, reactor.id))
    expect(stored).not.toContain(SETTING)
    expect((await a.admin.reactors.get(reactor.id)).configuration).toEqual({ [SETTING]: API_KEY })
    expect((await a.admin.reactors.list()).data[0]!.configuration).toEqual({ [SETTING]: API_KEY })
    const user = await a.app('private', ['token:use'])
    const answer = await unchecked(user.client).reactors.react(reactor.id, {})
    expect(answer.raw).toEqual({ seen: { [SETTING]: API_KEY } })
  })

  it('updates (PUT and PATCH) and delete work on a sealed configuration, which stays sealed', async () => {
    const { a, formula, reactor, dumped } = await withReactor()
    const put = await a.admin.reactors.update(reactor.id, {
      name: 'vendor 2',
      formula: { id: formula.id },
      configuration: { [SETTING]: OTHER_KEY },
    })
    expect(put.configuration).toEqual({ [SETTING]: OTHER_KEY })
    const patched = await unchecked(a.admin).reactors.patch(reactor.id, { name: 'vendor 3' })
    expect(patched).toMatchObject({ name: 'vendor 3', configuration: { [SETTING]: OTHER_KEY } })
    const raw = await dumped()
    for (const needle of [...forms(API_KEY), ...forms(OTHER_KEY)]) expect(raw, needle).not.toContain(needle)
    expect((await a.admin.reactors.get(reactor.id)).configuration).toEqual({ [SETTING]: OTHER_KEY })
    await a.admin.reactors.delete(reactor.id)
    expect((await failure(a.admin.reactors.get(reactor.id))).code).toBe('not_found')
  })

  it("a sealed configuration copied onto another reactor's record does not open there", async () => {
    const { a, b, store, reactor } = await withReactor()
    const other = await a.admin.reactors.create({
      name: 'other',
      formula_id: reactor.formula_id!,
      configuration: { [SETTING]: 'harmless' },
    })
    const sealed = (await store.getReactor(reactor.tenant_id, reactor.id))!.configuration
    const target = (await store.getReactor(other.tenant_id, other.id))!
    await store.write({ ops: [{ op: 'reactor.put', reactor: { ...target, configuration: sealed } }] })
    const error = await failure(a.admin.reactors.get(other.id))
    expect(error.code).toBe('unreadable')
    expect(error.message).not.toContain(API_KEY)
    // Another tenant's id never reads it either.
    expect((await failure(b.admin.reactors.get(reactor.id))).code).toBe('not_found')
  })

  it('a configuration stored in the clear by an earlier version reads as it is, and is sealed at its next write', async () => {
    const { a, store, reactor, dumped } = await withReactor()
    const stored = (await store.getReactor(reactor.tenant_id, reactor.id))!
    await store.write({
      ops: [{ op: 'reactor.put', reactor: { ...stored, configuration: { [SETTING]: OTHER_KEY } } }],
    })
    expect(await dumped()).toContain(OTHER_KEY)
    expect((await a.admin.reactors.get(reactor.id)).configuration).toEqual({ [SETTING]: OTHER_KEY })
    await unchecked(a.admin).reactors.patch(reactor.id, { name: 'renamed' })
    expect(await dumped()).not.toContain(OTHER_KEY)
    expect((await a.admin.reactors.get(reactor.id)).configuration).toEqual({ [SETTING]: OTHER_KEY })
  })

  it('a snapshot carries the configuration opened, and restores it into another vault (its tenants get new data keys)', async () => {
    const first = await createTestVault({ store: memoryStore(), runner: runner.get() })
    const admin = first.client('management')
    const formula = await admin.reactorFormulas.create(
      formulaBody({
        code: ECHO_CONFIG,
        configuration: [{ name: SETTING, type: 'string' }],
        request_parameters: [],
      }),
    )
    const reactor = await admin.reactors.create({
      name: 'vendor',
      formula_id: formula.id,
      configuration: { [SETTING]: API_KEY },
    })
    const snapshot = await first.snapshot()
    const second = await createTestVault({ store: memoryStore(), runner: runner.get() })
    await second.restore(snapshot)
    const read = await second.service.connect(first.keys.management).reactors.get(reactor.id)
    expect(read.configuration).toEqual({ [SETTING]: API_KEY })
  })
})
