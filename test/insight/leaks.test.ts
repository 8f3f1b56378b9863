import { afterEach, describe, expect, it } from 'vitest'
import { LeakError } from '../../testing/index.js'
import { createTestVault, type TestVault } from '../../testing/vault.js'

const EMAIL = 'Jane.Doe+vault@example.com'
const QUOTED = 'pa"ss\\word/7'
const CARD = '4242424242424242'
const NAME = 'Jane Quincy Doe'
/** Its base64 holds `/` and `+`, so its base64url differs. */
const SYMBOLS = 'a???>>>b~~'

let vault: TestVault
afterEach(() => vault?.close())

async function seeded() {
  vault = await createTestVault()
  const client = vault.client()
  const email = await client.tokens.create({
    type: 'token',
    data: { email: EMAIL, note: QUOTED, name: NAME },
  })
  const card = await client.tokens.create({ type: 'card_number', data: CARD })
  const symbols = await client.tokens.create({ type: 'token', data: SYMBOLS })
  return { email: email.id, card: card.id, symbols: symbols.id }
}

/** The one finding `value` gives, or throws. */
function only(value: unknown) {
  const found = vault.leaks.find(value)
  expect(found).toHaveLength(1)
  return found[0]!
}

const b64 = (s: string, url = false) => Buffer.from(s).toString(url ? 'base64url' : 'base64')

describe('leaks.check finds a plaintext in each encoding leaks take', () => {
  const cases: [string, unknown, 'email' | 'card' | 'symbols'][] = [
    ['plain', `user ${EMAIL} logged in`, 'email'],
    ['json', `{"note":${JSON.stringify(QUOTED)}}`, 'email'],
    ['json-twice', JSON.stringify(JSON.stringify({ note: QUOTED })), 'email'],
    ['url', `https://x.test/?e=${encodeURIComponent(EMAIL)}`, 'email'],
    ['form', `a=1&name=${encodeURIComponent(NAME).replaceAll('%20', '+')}`, 'email'],
    ['hex', `blob=${Buffer.from(EMAIL).toString('hex')}`, 'email'],
    ['base64', `Authorization: Basic ${b64(`user:${EMAIL}`)}`, 'email'],
    ['base64', b64(`ab${EMAIL}`), 'email'],
    ['base64', b64(`abc${EMAIL}xyz`), 'email'],
    ['base64', `x=${b64(`?${SYMBOLS}`)}`, 'symbols'],
    ['base64url', `x=${b64(`?${SYMBOLS}`, true)}`, 'symbols'],
    ['plain', `user ${EMAIL.toUpperCase()} logged in`, 'email'],
    ['hex', Buffer.from(EMAIL).toString('hex').toUpperCase(), 'email'],
    ['digits', `card ${CARD} charged`, 'card'],
    ['digits', 'card 4242 4242 4242 4242 charged', 'card'],
    ['digits', 'card 4242-4242-4242-4242 charged', 'card'],
    ['digits', { amount: 100, pan: Number(CARD) }, 'card'],
  ]
  for (const [encoding, value, which] of cases) {
    it(`${encoding}: ${typeof value === 'string' ? value.slice(0, 40) : 'an object'}`, async () => {
      const ids = await seeded()
      const finding = only(value)
      expect(finding).toMatchObject({ tokenId: ids[which], encoding, canary: false })
      expect(() => vault.leaks.check(value)).toThrow(LeakError)
    })
  }

  it('the same text without the plaintext passes', async () => {
    await seeded()
    const clean = [
      'user jane.doe@example.com logged in',
      `{"note":"pa\\"ss\\\\word/8"}`,
      b64('user:someone-else@example.com'),
      'card 4242 4242 4242 4241 charged',
      'card 4242  4242 4242 4242 (two spaces break a group)',
      Buffer.from(EMAIL.replace('J', 'K')).toString('hex'),
    ]
    expect(vault.leaks.find(clean)).toEqual([])
    expect(() => vault.leaks.check(clean)).not.toThrow()
  })

  it('names the token, the path and the offset, never the plaintext', async () => {
    const ids = await seeded()
    const captured = {
      rows: [
        { id: 1, note: 'fine' },
        { id: 2, note: `x ${EMAIL}` },
      ],
      logs: ['ok', `pan=${CARD}`],
    }
    let error: unknown
    try {
      vault.leaks.check(captured)
    } catch (e) {
      error = e
    }
    expect(error).toBeInstanceOf(LeakError)
    const leak = error as LeakError
    expect(leak.findings).toEqual([
      { tokenId: ids.email, canary: false, encoding: 'plain', path: '$.rows[1].note', offset: 2 },
      { tokenId: ids.card, canary: false, encoding: 'digits', path: '$.logs[1]', offset: 4 },
    ])
    expect(leak.message).toContain(ids.email)
    expect(leak.message).not.toContain(EMAIL)
    expect(leak.message).not.toContain(CARD)
  })

  it('a key holding a plaintext is named by its place, not quoted', async () => {
    const ids = await seeded()
    const found = vault.leaks.find({ [CARD]: `again ${CARD}` })
    expect(found.map((f) => [f.tokenId, f.path])).toEqual([
      [ids.card, '$<key #0>'],
      [ids.card, '$[#0]'],
    ])
  })

  it('reads bytes, Maps, Headers, errors and a Response', async () => {
    const ids = await seeded()
    expect(only(Buffer.from(`x${EMAIL}`)).tokenId).toBe(ids.email)
    expect(only(new Uint8Array(Buffer.from(CARD))).tokenId).toBe(ids.card)
    expect(only(new Map([['pan', CARD]])).path).toBe('$.pan')
    expect(only(new Headers({ 'x-email': EMAIL })).path).toBe('$["x-email"]')
    expect(vault.leaks.find(new Error(`bad card ${CARD}`)).map((f) => f.path)).toEqual([
      '$.message',
      '$.stack',
    ])
    await expect(vault.leaks.check(Response.json({ card: CARD }))).rejects.toThrow(LeakError)
    await expect(vault.leaks.check(Response.json({ card: 'none' }))).resolves.toBeUndefined()
  })
})

describe('leaks.check: the minimum length', () => {
  it('a plaintext of 6 characters is searched, one of 5 is not (no false alarm on "12")', async () => {
    vault = await createTestVault()
    const client = vault.client()
    const six = await client.tokens.create({ type: 'token', data: 'q7x2k9' })
    await client.tokens.create({ type: 'token', data: 'z8w1v' })
    await client.tokens.create({
      type: 'card',
      data: { number: CARD, expiration_month: 12, expiration_year: 2031, cvc: '123' },
    })
    expect(vault.leaks.minLength).toBe(6)
    expect(vault.leaks.find('code q7x2k9 sent').map((f) => f.tokenId)).toEqual([six.id])
    expect(vault.leaks.find('code z8w1v sent')).toEqual([])
    expect(vault.leaks.find('month 12, cvc 123, year 2031')).toEqual([])
  })
})

describe('leaks.check follows the vault state', () => {
  it('an updated token is searched for its new value, a deleted one not at all', async () => {
    vault = await createTestVault()
    const client = vault.client()
    const t = await client.tokens.create({ type: 'token', data: 'first-secret' })
    expect(vault.leaks.find('first-secret')).toHaveLength(1)
    await client.tokens.update(t.id, { data: 'second-secret' })
    expect(vault.leaks.find('first-secret')).toEqual([])
    expect(vault.leaks.find('second-secret')).toHaveLength(1)
    await client.tokens.delete(t.id)
    expect(vault.leaks.find('second-secret')).toEqual([])
  })

  it('a value staged in an open transaction is held too', async () => {
    vault = await createTestVault()
    const tx = await vault.client().transactions.create()
    const t = await vault
      .client('private', { transactionId: tx.id })
      .tokens.create({ type: 'token', data: 'staged-secret' })
    expect(vault.leaks.find('staged-secret').map((f) => f.tokenId)).toEqual([t.id])
    await vault.client().transactions.rollback(tx.id)
    expect(vault.leaks.find('staged-secret')).toEqual([])
  })

  it('after reset and restore, the index holds the restored state', async () => {
    vault = await createTestVault()
    await vault.client().tokens.create({ type: 'token', data: 'before-reset' })
    const snapshot = await vault.snapshot()
    await vault.reset()
    expect(vault.leaks.find('before-reset')).toEqual([])
    await vault.restore(snapshot)
    expect(vault.leaks.find('before-reset')).toHaveLength(1)
  })
})

describe('leaks.canary', () => {
  for (const type of [
    'token',
    'card',
    'card_number',
    'bank',
    'social_security_number',
    'us_bank_routing_number',
  ]) {
    it(`makes a unique ${type} that is found where it is planted`, async () => {
      vault = await createTestVault()
      const a = await vault.leaks.canary(type)
      const b = await vault.leaks.canary(type)
      expect(a.value).not.toBe(b.value)
      expect(a.type).toBe(type)
      const found = vault.leaks.find({ fixture: { field: `planted ${a.value} here` } })
      expect(found).toEqual([
        expect.objectContaining({ tokenId: a.id, canary: true, path: '$.fixture.field' }),
      ])
    })
  }

  it('is not counted as the private application using anything', async () => {
    vault = await createTestVault()
    await vault.leaks.canary('card')
    expect(
      vault.usedAccess().callers.find((c) => c.id === vault.applications.private.id)?.operations,
    ).toEqual([])
  })
})

describe('leaks.watch', () => {
  it('captures stdout, stderr and console until stop, which fails on a plaintext and puts them back', async () => {
    await seeded()
    const write = process.stdout.write
    const log = console.log
    const watch = vault.leaks.watch({ passThrough: false })
    console.log('charging card', CARD)
    process.stderr.write(`mail to ${EMAIL}\n`)
    expect(watch.output()).toEqual([`charging card ${CARD}\n`, `mail to ${EMAIL}\n`])
    expect(() => watch.stop()).toThrow(LeakError)
    expect(process.stdout.write).toBe(write)
    expect(console.log).toBe(log)
  })

  it('stop passes when nothing held was written', async () => {
    await seeded()
    const watch = vault.leaks.watch({ passThrough: false })
    console.info('charged card ending 4242')
    expect(() => watch.stop()).not.toThrow()
  })
})
