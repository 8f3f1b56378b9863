import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { ServiceError } from '../../entry/index.js'
import { localMasterKey, sealValue } from '../../src/encryption/keyring.js'
import { Keyring, sealedStore } from '../../src/encryption/sealed-store.js'
import type { IdempotencyRecord, Reactor, StoredToken } from '../../src/kernel/types.js'
import { withoutExpiredCvc } from '../../src/tokens/card-cvc.js'

/**
 * `src/encryption/sealed-store.ts` on its own, over a raw memory store: what a tampered or
 * malformed ciphertext reads as (the exact coded error), legacy records, and the keyring's keys.
 */
const NOW = '2030-01-01T00:00:00.000Z'
/** The sealed store's other rules, kept out of these tests: reads answer what opens. */
const PLAIN_READS = { searchIndexPurpose: 'search-index', asRead: (token: StoredToken) => token }
const master = () => localMasterKey(new Uint8Array(32).fill(9))

async function world(options = PLAIN_READS) {
  const raw = memoryStore()
  const keyring = new Keyring(raw, [master()])
  const sealed = sealedStore(raw, keyring, options)
  await raw.write({
    ops: [
      {
        op: 'tenant.put',
        tenant: { id: 'ten', name: 'ten', created_at: NOW, data_key: await keyring.newTenantKey('ten') },
      },
    ],
  })
  const token = (id: string, extra: Partial<StoredToken> = {}): StoredToken => ({
    id,
    tenant_id: 'ten',
    type: 'token',
    data: 'plain',
    containers: ['/general/'],
    metadata: {},
    created_by: 'app',
    created_at: NOW,
    ...extra,
  })
  /** Puts `value` sealed as token `id`'s data, straight into the raw store. */
  const plant = async (id: string, value: unknown) => {
    const key = await keyring.key('ten')
    const data = { $sealed: sealValue(key, value, `tokenvault:token:v1:ten:${id}`) }
    await raw.write({ ops: [{ op: 'token.put', token: token(id, { data }) }] })
  }
  return { raw, keyring, sealed, token, plant }
}

async function code(read: Promise<unknown>): Promise<[string, string]> {
  const error = await read.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(ServiceError)
  return [(error as ServiceError).code, (error as ServiceError).message]
}
const unreadableToken = (id: string): [string, string] => [
  'unreadable',
  `the stored data of token ${id} fails its integrity check and can't be read`,
]

describe('sealed tokens', () => {
  it('a token without a mask reads without one; with one, with it', async () => {
    const { sealed, token } = await world()
    await sealed.write({
      ops: [
        { op: 'token.put', token: token('a') },
        { op: 'token.put', token: token('b', { mask: 'm' }) },
      ],
    })
    const a = await sealed.getToken('ten', 'a')
    expect(a?.data).toBe('plain')
    expect(a && 'mask' in a).toBe(false)
    expect((await sealed.getToken('ten', 'b'))?.mask).toBe('m')
  })

  it('a sealed card reads without its cvc once the cvc deadline has come, and with it before (the rule the service hands in)', async () => {
    const { sealed, token } = await world({
      ...PLAIN_READS,
      asRead: (t: StoredToken) => withoutExpiredCvc(t, NOW),
    })
    const card = { number: '4242424242424242', cvc: '123' }
    await sealed.write({
      ops: [
        { op: 'token.put', token: token('due', { data: card, cvc_expires_at: NOW }) },
        {
          op: 'token.put',
          token: token('later', { data: card, cvc_expires_at: '2030-01-01T00:00:00.001Z' }),
        },
        { op: 'token.put', token: token('none', { data: card }) },
      ],
    })
    const due = (await sealed.getToken('ten', 'due'))!
    expect(due.data).toEqual({ number: '4242424242424242' })
    expect('cvc_expires_at' in due).toBe(false)
    expect((await sealed.getToken('ten', 'later'))!.data).toEqual(card)
    expect((await sealed.getToken('ten', 'none'))!.data).toEqual(card)
  })

  it('children listed through the sealed store open', async () => {
    const { sealed, token } = await world()
    await sealed.write({
      ops: [
        { op: 'token.put', token: token('parent') },
        { op: 'token.put', token: token('child', { data: { secret: 'child-secret' }, mask: 'm' }) },
        {
          op: 'association.put',
          association: { tenant_id: 'ten', parent_id: 'parent', child_id: 'child', created_at: NOW },
        },
      ],
    })
    const page = await sealed.listChildren('ten', 'parent', { offset: 0, limit: 10, now: NOW })
    expect(page.total).toBe(1)
    expect(page.items.map((t) => [t.id, t.data, t.mask])).toEqual([
      ['child', { secret: 'child-secret' }, 'm'],
    ])
  })

  it('a ciphertext that opens to anything but [data] or [data, mask] is refused with the exact error', async () => {
    const { sealed, plant } = await world()
    for (const [id, value] of [
      ['s', 'just data'],
      ['e', []],
      ['three', [1, 2, 3]],
      ['o', { 0: 1 }],
    ] as const) {
      await plant(id, value)
      expect(await code(sealed.getToken('ten', id))).toEqual(unreadableToken(id))
    }
    await plant('one', ['d'])
    const one = await sealed.getToken('ten', 'one')
    expect(one?.data).toBe('d')
    expect(one && 'mask' in one).toBe(false)
    await plant('two', ['d', 'm'])
    expect((await sealed.getToken('ten', 'two'))?.mask).toBe('m')
  })

  it('legacy plaintext reads as it is, null and look-alikes of a sealed value included', async () => {
    const { raw, sealed, token } = await world()
    const legacy = [null, 'text', { $sealed: 'x', other: 1 }, { $sealed: 1 }, [1]] as const
    for (const [i, data] of legacy.entries()) {
      await raw.write({ ops: [{ op: 'token.put', token: token(`l${i}`, { data: data as never }) }] })
      expect((await sealed.getToken('ten', `l${i}`))?.data).toEqual(data)
    }
  })
})

describe('sealed reactor configurations and idempotent answers', () => {
  const reactor = (id: string, configuration: unknown): Reactor => ({
    id,
    tenant_id: 'ten',
    name: id,
    code: 'x',
    configuration: configuration as Reactor['configuration'],
    created_at: NOW,
    created_by: 'app',
  })

  it('a configuration that opens to anything but an object is refused with the exact error', async () => {
    const { raw, keyring, sealed } = await world()
    const key = await keyring.key('ten')
    for (const [id, value] of [
      ['n', null],
      ['a', [1]],
      ['s', 'x'],
    ] as const) {
      const configuration = { $sealed: sealValue(key, value, `tokenvault:reactor:v1:ten:${id}`) }
      await raw.write({ ops: [{ op: 'reactor.put', reactor: reactor(id, configuration) }] })
      expect(await code(sealed.getReactor('ten', id))).toEqual([
        'unreadable',
        `the stored configuration of reactor ${id} fails its integrity check and can't be read`,
      ])
    }
  })

  it('an answer moved to another idempotency key is refused with the exact error', async () => {
    const { raw, sealed } = await world()
    const record = (id: string): IdempotencyRecord => ({
      tenant_id: 'ten',
      id,
      state: 'done',
      claim: 'c',
      request: 'r',
      answer: '{"ok":1}',
      created_at: NOW,
      lease_until: NOW,
      expires_at: '2030-01-02T00:00:00.000Z',
    })
    await sealed.write({ ops: [{ op: 'idempotency.put', record: record('k1') }] })
    expect((await sealed.getIdempotency('ten', 'k1'))?.answer).toBe('{"ok":1}')
    const stored = (await raw.getIdempotency('ten', 'k1'))!
    await raw.write({ ops: [{ op: 'idempotency.put', record: { ...stored, id: 'k2' } }] })
    expect(await code(sealed.getIdempotency('ten', 'k2'))).toEqual([
      'unreadable',
      'a stored idempotent answer fails its integrity check',
    ])
  })
})

describe('the keyring', () => {
  it('a tenant from before encryption gets a data key at its first use, kept in its record', async () => {
    const raw = memoryStore()
    const keyring = new Keyring(raw, [master()])
    await raw.write({ ops: [{ op: 'tenant.put', tenant: { id: 'old', name: 'old', created_at: NOW } }] })
    const sealed = sealedStore(raw, keyring, PLAIN_READS)
    await sealed.write({
      ops: [
        {
          op: 'token.put',
          token: {
            id: 't',
            tenant_id: 'old',
            type: 'token',
            data: 'v',
            containers: [],
            metadata: {},
            created_by: 'a',
            created_at: NOW,
          },
        },
      ],
    })
    const tenant = await raw.getTenant('old')
    expect(tenant?.data_key).toEqual({ key_id: master().keyId, wrapped: expect.any(String) })
    // Another service over the same store reads it with that key.
    const again = sealedStore(raw, new Keyring(raw, [master()]), PLAIN_READS)
    expect((await again.getToken('old', 't'))?.data).toBe('v')
  })

  it('an unknown tenant fails, and is tried again once it exists', async () => {
    const raw = memoryStore()
    const keyring = new Keyring(raw, [master()])
    await expect(keyring.key('later')).rejects.toThrow('no tenant later')
    await raw.write({ ops: [{ op: 'tenant.put', tenant: { id: 'later', name: 'l', created_at: NOW } }] })
    await expect(keyring.key('later')).resolves.toBeDefined()
    expect(keyring.loaded('later')).toBeDefined()
  })

  it('a wrong or missing master key is named', async () => {
    const raw = memoryStore()
    const first = new Keyring(raw, [master()])
    const wrapped = await first.newTenantKey('ten')
    const other = localMasterKey(new Uint8Array(32).fill(1))
    const third = localMasterKey(new Uint8Array(32).fill(2))
    await expect(new Keyring(raw, [other, third]).unwrap('ten', wrapped)).rejects.toThrow(
      `masterKey: tenant ten's data key is wrapped by master key ${wrapped.key_id}, which this service was not given (it has ${other.keyId}, ${third.keyId})`,
    )
    const impostor = { ...other, keyId: wrapped.key_id }
    await expect(new Keyring(raw, [impostor]).unwrap('ten', wrapped)).rejects.toThrow(
      `masterKey: master key ${wrapped.key_id} could not unwrap tenant ten's data key`,
    )
  })
})

describe('guarded writes through the sealed store', () => {
  it('token.unchanged holds for the token as read, or an equal copy, and fails once it changed', async () => {
    const { sealed, token } = await world()
    await sealed.write({ ops: [{ op: 'token.put', token: token('g', { search_index_values: ['v'] }) }] })
    const read = (await sealed.getToken('ten', 'g'))!
    const guarded = (check: StoredToken, data: string) =>
      sealed.write({
        checks: [{ check: 'token.unchanged', tenant_id: 'ten', id: 'g', token: check }],
        ops: [{ op: 'token.put', token: { ...read, data } }],
      })
    expect(await guarded(structuredClone(read), 'copy')).toEqual({ ok: true })
    expect((await guarded(read, 'stale')).ok).toBe(false)
    const fresh = (await sealed.getToken('ten', 'g'))!
    expect(fresh.data).toBe('copy')
    expect((await guarded({ ...fresh, data: 'not what is stored' }, 'x')).ok).toBe(false)
    expect(
      (
        await sealed.write({
          checks: [{ check: 'token.unchanged', tenant_id: 'ten', id: 'g', token: fresh }],
          ops: [{ op: 'token.put', token: { ...fresh, data: 'known' } }],
        })
      ).ok,
    ).toBe(true)
    expect((await sealed.getToken('ten', 'g'))?.data).toBe('known')
  })

  it('token.unchanged holds for a token read in a page, unmarked, and fails once it changed', async () => {
    const { sealed, token } = await world()
    await sealed.write({ ops: [{ op: 'token.put', token: token('p') }] })
    const [paged] = await sealed.getTokens('ten', ['p'])
    const guarded = (check: StoredToken, data: string) =>
      sealed.write({
        checks: [{ check: 'token.unchanged', tenant_id: 'ten', id: 'p', token: check }],
        ops: [{ op: 'token.put', token: { ...paged!, data } }],
      })
    expect(await guarded(paged!, 'first')).toEqual({ ok: true })
    expect((await guarded(paged!, 'stale')).ok).toBe(false)
    expect((await sealed.getToken('ten', 'p'))?.data).toBe('first')
  })

  it('search index values are stored only as keyed hashes, one per value', async () => {
    const { raw, sealed, token } = await world()
    await sealed.write({
      ops: [{ op: 'token.put', token: token('h', { search_index_values: ['v1', 'v2'] }) }],
    })
    const stored = (await raw.getToken('ten', 'h'))!
    expect(stored).not.toHaveProperty('search_index_values')
    expect(stored.search_index_hashes).toHaveLength(2)
    for (const hash of stored.search_index_hashes!) expect(hash).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(stored.search_index_hashes![0]).not.toBe(stored.search_index_hashes![1])
    await sealed.write({ ops: [{ op: 'token.put', token: token('none') }] })
    expect(await raw.getToken('ten', 'none')).not.toHaveProperty('search_index_hashes')
  })

  it('reactor.unchanged holds for the reactor as read, or an equal copy, and fails once it changed; lists open', async () => {
    const { sealed } = await world()
    const reactor: Reactor = {
      id: 'r',
      tenant_id: 'ten',
      name: 'r',
      code: 'x',
      configuration: { k: 'v' },
      created_at: NOW,
      created_by: 'a',
    }
    await sealed.write({ ops: [{ op: 'reactor.put', reactor }] })
    const read = (await sealed.getReactor('ten', 'r'))!
    const guarded = (check: Reactor, name: string) =>
      sealed.write({
        checks: [{ check: 'reactor.unchanged', tenant_id: 'ten', id: 'r', reactor: check }],
        ops: [{ op: 'reactor.put', reactor: { ...read, name } }],
      })
    expect(await guarded(structuredClone(read), 'copy')).toEqual({ ok: true })
    expect((await guarded(read, 'stale')).ok).toBe(false)
    const fresh = (await sealed.getReactor('ten', 'r'))!
    expect((await guarded({ ...fresh, configuration: { k: 'other' } }, 'x')).ok).toBe(false)
    expect((await guarded(fresh, 'known')).ok).toBe(true)
    const listed = await sealed.listReactors('ten', { offset: 0, limit: 10 } as never)
    expect(listed.items.map((r) => [r.name, r.configuration])).toEqual([['known', { k: 'v' }]])
  })
})

describe('transactions through the sealed store', () => {
  it('staged records are sealed in the raw store and open when read; transaction.unchanged holds for an equal copy', async () => {
    const { raw, sealed, token } = await world()
    const tx = {
      id: 'tx',
      tenant_id: 'ten',
      state: 'open' as const,
      created_at: NOW,
      created_by: 'a',
      expires_at: '2030-01-02T00:00:00.000Z',
      version: 1,
    }
    const staged = {
      tenant_id: 'ten',
      transaction_id: 'tx',
      token_id: 'staged',
      seq: 1,
      token: token('staged', { data: 'staged-secret', mask: 'mask-secret' }),
    }
    const deleted = { ...staged, token_id: 'gone', token: null }
    await sealed.write({
      ops: [
        { op: 'transaction.put', transaction: tx },
        { op: 'staged.put', staged },
        { op: 'staged.put', staged: deleted },
      ],
    })
    const stored = JSON.stringify(await raw.listStaged('ten', 'tx', { limit: 10 }))
    expect(stored).not.toContain('staged-secret')
    expect(stored).not.toContain('mask-secret')
    expect(stored).toContain('$sealed')
    expect(await sealed.getStaged('ten', 'tx', ['staged', 'gone'])).toEqual([staged, deleted])
    expect(await sealed.listStaged('ten', 'tx', { limit: 10 })).toEqual([deleted, staged])
    const read = (await sealed.getTransaction('ten', 'tx'))!
    expect(read).toEqual(tx)
    const guarded = (check: typeof read, state: 'committed' | 'rolled_back') =>
      sealed.write({
        checks: [{ check: 'transaction.unchanged', tenant_id: 'ten', id: 'tx', transaction: check }],
        ops: [{ op: 'transaction.put', transaction: { ...read, state } }],
      })
    expect(await guarded(structuredClone(read), 'rolled_back')).toEqual({ ok: true })
    expect((await guarded(read, 'committed')).ok).toBe(false)
  })

  it('transaction.unchanged: a copy that differs from the stored one fails, whatever was staged beside it', async () => {
    const { sealed, token } = await world()
    const base = {
      id: 'tx',
      tenant_id: 'ten',
      state: 'open' as const,
      created_at: NOW,
      created_by: 'a',
      expires_at: '2030-01-02T00:00:00.000Z',
      version: 0,
    }
    const guard = (transaction: typeof read) =>
      sealed.write({
        checks: [{ check: 'transaction.unchanged', tenant_id: 'ten', id: 'tx', transaction }],
        ops: [],
      })
    // Nothing staged: an equal copy holds, a copy that differs in any field fails.
    await sealed.write({ ops: [{ op: 'transaction.put', transaction: base }] })
    const read = (await sealed.getTransaction('ten', 'tx'))!
    expect(await guard(structuredClone(read))).toEqual({ ok: true })
    expect((await guard({ ...structuredClone(read), state: 'committed' })).ok).toBe(false)
    expect((await guard({ ...structuredClone(read), version: 1 })).ok).toBe(false)
    // A staged write (sealed in its own record) bumps the version: the copy read before it fails.
    const staged = { tenant_id: 'ten', transaction_id: 'tx', token_id: 'staged', seq: 1 }
    await sealed.write({
      ops: [
        { op: 'transaction.put', transaction: { ...base, version: 1 } },
        { op: 'staged.put', staged: { ...staged, token: token('staged', { data: 'staged-secret' }) } },
      ],
    })
    const withWrites = (await sealed.getTransaction('ten', 'tx'))!
    expect(await guard(structuredClone(withWrites))).toEqual({ ok: true })
    expect((await guard({ ...structuredClone(withWrites), expires_at: NOW })).ok).toBe(false)
    expect((await guard(structuredClone(read))).ok).toBe(false)
    // A transaction that is not stored: no copy of one holds.
    const gone = { ...structuredClone(withWrites), id: 'gone' }
    const result = await sealed.write({
      checks: [{ check: 'transaction.unchanged', tenant_id: 'ten', id: 'gone', transaction: gone }],
      ops: [],
    })
    expect(result.ok).toBe(false)
  })
})
