import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { ServiceError } from '../../entry/index.js'
import { localMasterKey } from '../../src/encryption/keyring.js'
import { Keyring, sealedStore } from '../../src/encryption/sealed-store.js'
import type { IdempotencyRecord, Reactor, StoredToken } from '../../src/kernel/types.js'

/**
 * What each ciphertext is bound to (docs/security.md, "Data at rest"): a token's `data`
 * and `mask` are one ciphertext bound to the record kind, tenant and token id; a reactor's
 * configuration to its kind, tenant and reactor id; an idempotent answer to its kind, tenant and
 * key. An attacker with write access to the raw store moves ciphertexts around: every move is
 * refused with the coded error `unreadable`, and no error carries the plaintext.
 */
const NOW = '2030-01-01T00:00:00.000Z'
/** The sealed store's other rules, kept out of these tests: reads answer what opens. */
const PLAIN_READS = { searchIndexPurpose: 'search-index', asRead: (token: StoredToken) => token }
const SECRET = 'secret-4111111111111111'
const MASK = 'mask-xxxx-1111'
const CONFIG = 'sk_live_vendorkey'

async function world() {
  const raw = memoryStore()
  const keyring = new Keyring(raw, [localMasterKey(new Uint8Array(32).fill(7))])
  const sealed = sealedStore(raw, keyring, PLAIN_READS)
  for (const id of ['tenant-a', 'tenant-b']) {
    await raw.write({
      ops: [
        {
          op: 'tenant.put',
          tenant: { id, name: id, created_at: NOW, data_key: await keyring.newTenantKey(id) },
        },
      ],
    })
  }
  const token = (tenant: string, id: string, data: string): StoredToken => ({
    id,
    tenant_id: tenant,
    type: 'token',
    data,
    mask: MASK,
    containers: ['/general/'],
    metadata: {},
    created_by: 'app',
    created_at: NOW,
  })
  const reactor = (tenant: string, id: string): Reactor => ({
    id,
    tenant_id: tenant,
    name: id,
    code: 'module.exports = async () => ({})',
    configuration: { vendor_key: CONFIG },
    created_at: NOW,
    created_by: 'app',
  })
  const answer = (tenant: string, id: string): IdempotencyRecord => ({
    tenant_id: tenant,
    id,
    state: 'done',
    claim: 'c',
    request: 'r',
    answer: JSON.stringify({ data: SECRET }),
    created_at: NOW,
    lease_until: NOW,
    expires_at: '2030-01-02T00:00:00.000Z',
  })
  await sealed.write({
    ops: [
      { op: 'token.put', token: token('tenant-a', 'tok-1', SECRET) },
      { op: 'token.put', token: token('tenant-a', 'tok-2', 'harmless-2') },
      { op: 'token.put', token: token('tenant-b', 'tok-1', 'harmless-b') },
      { op: 'reactor.put', reactor: reactor('tenant-a', 'rx-1') },
      { op: 'idempotency.put', record: answer('tenant-a', 'idem-1') },
    ],
  })
  const rawToken = async (tenant: string, id: string) => (await raw.getToken(tenant, id))!
  return { raw, sealed, rawToken }
}

/** Runs `read`, which must fail with `unreadable` and no plaintext in its message. */
async function refused(read: () => Promise<unknown>) {
  const error = await read().then(
    (value) => value,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(ServiceError)
  expect((error as ServiceError).code).toBe('unreadable')
  for (const plaintext of [SECRET, MASK, CONFIG, '4111']) {
    expect((error as ServiceError).message).not.toContain(plaintext)
  }
}

describe('what a ciphertext is bound to', () => {
  it('the raw store holds one sealed `data` per token (mask inside it), and every record opens where it was written', async () => {
    const { sealed, rawToken } = await world()
    const stored = await rawToken('tenant-a', 'tok-1')
    expect(Object.keys(stored.data as object)).toEqual(['$sealed'])
    expect(stored).not.toHaveProperty('mask')
    expect(JSON.stringify(stored)).not.toContain(SECRET)
    expect(JSON.stringify(stored)).not.toContain(MASK)
    const opened = await sealed.getToken('tenant-a', 'tok-1')
    expect(opened?.data).toBe(SECRET)
    expect(opened?.mask).toBe(MASK)
    expect((await sealed.getReactor('tenant-a', 'rx-1'))?.configuration).toEqual({ vendor_key: CONFIG })
    expect((await sealed.getIdempotency('tenant-a', 'idem-1'))?.answer).toBe(JSON.stringify({ data: SECRET }))
  })

  it('across tenants: a token ciphertext moved to the same token id in another tenant is refused', async () => {
    const { raw, sealed, rawToken } = await world()
    const a = await rawToken('tenant-a', 'tok-1')
    const b = await rawToken('tenant-b', 'tok-1')
    await raw.write({ ops: [{ op: 'token.put', token: { ...b, data: a.data } }] })
    await refused(() => sealed.getToken('tenant-b', 'tok-1'))
    // The whole record relabelled to the other tenant is refused as well.
    await raw.write({ ops: [{ op: 'token.put', token: { ...a, tenant_id: 'tenant-b', id: 'tok-9' } }] })
    await refused(() => sealed.getToken('tenant-b', 'tok-9'))
    expect((await sealed.getToken('tenant-a', 'tok-1'))?.data).toBe(SECRET)
  })

  it('across tokens: a ciphertext moved to another token of the same tenant is refused, in gets and lists', async () => {
    const { raw, sealed, rawToken } = await world()
    const one = await rawToken('tenant-a', 'tok-1')
    const two = await rawToken('tenant-a', 'tok-2')
    await raw.write({ ops: [{ op: 'token.put', token: { ...two, data: one.data } }] })
    await refused(() => sealed.getToken('tenant-a', 'tok-2'))
    await refused(() => sealed.listTokens('tenant-a', { offset: 0, limit: 10, now: NOW }))
  })

  it('across fields: a data ciphertext moved into `mask` (of its own token or another) is refused, never answered', async () => {
    const { raw, sealed, rawToken } = await world()
    const one = await rawToken('tenant-a', 'tok-1')
    const two = await rawToken('tenant-a', 'tok-2')
    await raw.write({ ops: [{ op: 'token.put', token: { ...two, mask: one.data } }] })
    await refused(() => sealed.getToken('tenant-a', 'tok-2'))
    await raw.write({ ops: [{ op: 'token.put', token: { ...one, mask: one.data } }] })
    await refused(() => sealed.getToken('tenant-a', 'tok-1'))
  })

  it('across kinds: token data, reactor configuration and idempotent answers do not open as one another', async () => {
    const { raw, sealed, rawToken } = await world()
    const token = await rawToken('tenant-a', 'tok-1')
    const reactor = (await raw.getReactor('tenant-a', 'rx-1'))!
    const record = (await raw.getIdempotency('tenant-a', 'idem-1'))!
    // Each is moved to a record of another kind with the same tenant and id.
    await raw.write({
      ops: [
        { op: 'reactor.put', reactor: { ...reactor, id: 'tok-1', configuration: token.data as never } },
        { op: 'token.put', token: { ...token, id: 'rx-1', data: reactor.configuration as never } },
        { op: 'token.put', token: { ...token, id: 'idem-1', data: { $sealed: record.answer! } } },
        {
          op: 'idempotency.put',
          record: { ...record, id: 'tok-1', answer: (token.data as { $sealed: string }).$sealed },
        },
      ],
    })
    await refused(() => sealed.getReactor('tenant-a', 'tok-1'))
    await refused(() => sealed.getToken('tenant-a', 'rx-1'))
    await refused(() => sealed.getToken('tenant-a', 'idem-1'))
    await refused(() => sealed.getIdempotency('tenant-a', 'tok-1'))
  })
})
