import { describe, expect, it } from 'vitest'
import { createHttpHandler } from '../../adapters/http/index.js'
import { ServiceError } from '../../entry/index.js'
import type { AccessRule, Json, Permission } from '../../src/kernel/types.js'
import { FAILS_ON_STORED_DATA, withoutStoredValues } from '../../src/tokens/visibility.js'
import { setup } from '../core/setup.js'

// No write may let anyone see more of a token than they could before it: every attack below is a
// caller that may update a token but not read it revealed, trying to make the token (or the
// write's answer) show more. Each runs with each key kind, over the in-process client and over HTTP.

const CARD = '4242424242424242'
const SSN = '536-22-8413'
const CARD_MASK = { number: '{{ data.number | reveal_last: 4 }}' }

type Answer = { status: number; body: Record<string, unknown> }

/** One way of calling the vault as one key: in process or over the HTTP adapter. */
interface Caller {
  update(id: string, patch: Json, transactionId?: string): Promise<Answer>
  get(id: string): Promise<Answer>
}

const STATUS: Record<string, number> = { forbidden: 403, validation_failed: 400, not_found: 404 }

async function inProcess(call: () => Promise<unknown>): Promise<Answer> {
  try {
    return { status: 200, body: (await call()) as Record<string, unknown> }
  } catch (error) {
    if (!(error instanceof ServiceError)) throw error
    return {
      status: STATUS[error.code] ?? 500,
      body: { detail: error.message, ...(error.issues ? { errors: error.issues } : {}) },
    }
  }
}

type World = Awaited<ReturnType<typeof world>>
type Transport = 'in-process' | 'http'

function callerFor(w: World, key: string, transport: Transport): Caller {
  if (transport === 'in-process') {
    return {
      update: (id, patch, transactionId) =>
        inProcess(() =>
          w.s.service.connect(key, transactionId ? { transactionId } : {}).tokens.update(id, patch as never),
        ),
      get: (id) => inProcess(() => w.s.service.connect(key).tokens.get(id)),
    }
  }
  const send = async (method: string, path: string, body?: Json, transactionId?: string) => {
    const headers: Record<string, string> = { 'SVC-API-KEY': key }
    if (transactionId) headers['SVC-TRANSACTION-ID'] = transactionId
    if (body !== undefined) headers['Content-Type'] = 'application/merge-patch+json'
    const res = await w.handler(
      new Request(`http://vault.test${path}`, {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
    )
    const text = await res.text()
    return { status: res.status, body: text ? JSON.parse(text) : {} }
  }
  return {
    update: (id, patch, transactionId) => send('PATCH', `/tokens/${id}`, patch, transactionId),
    get: (id) => send('GET', `/tokens/${id}`),
  }
}

const rule = (
  priority: number,
  scope: Pick<AccessRule, 'container' | 'conditions'>,
  transform: AccessRule['transform'],
  permissions: Permission[],
): AccessRule => ({ description: `rule ${priority}`, priority, ...scope, transform, permissions })

/**
 * A vault with a card in `/pci/high/` (masked to its last 4), an SSN, and a token whose custom mask
 * falls back to a second field; a masked reader and a reader revealing `/general/` to watch what
 * others see afterwards; and the attacking keys, one per kind.
 */
async function world() {
  const s = await setup()
  const full = s.client
  const card = await full.tokens.create({
    id: 'card-1',
    type: 'token',
    data: { number: CARD },
    mask: CARD_MASK,
    containers: ['/pci/high/'],
  })
  const ssn = await full.tokens.create({ id: 'ssn-1', type: 'social_security_number', data: SSN })
  const fallback = await full.tokens.create({
    id: 'fb-1',
    type: 'token',
    data: { shown: 'public part', secret: CARD },
    mask: '{{ data.shown | default: data.secret }}',
    containers: ['/pci/high/'],
  })
  const digit = await full.tokens.create({
    id: 'fp-1',
    type: 'token',
    data: { number: CARD },
    metadata: { at: '15' },
    containers: ['/pci/high/'],
    fingerprint_expression: '{{ data.number | slice: metadata.at, 1 }}',
  })
  const masked = await s.keyFor('private', [], [rule(1, { container: '/' }, 'mask', ['token:read'])])
  const generalRevealer = await s.keyFor(
    'private',
    [],
    [rule(1, { container: '/general/' }, 'reveal', ['token:read'])],
  )
  const handler = createHttpHandler(s.service, { log: () => {} })
  return { s, ids: [card.id, ssn.id, fallback.id, digit.id], masked, generalRevealer, handler }
}

/** The attacking keys: one of each kind that may update the tokens but not read them revealed. */
const KINDS = {
  /** A browser application: token:create + token:update, no read at all. */
  public: async (w: World) => (await w.s.keyFor('public', ['token:create', 'token:update'])).key,
  /** A private application reading masked everywhere and revealing `/general/` (where it moves tokens to). */
  'private masked': async (w: World) =>
    (
      await w.s.keyFor(
        'private',
        [],
        [
          rule(1, { container: '/general/' }, 'reveal', ['token:read']),
          rule(2, { container: '/' }, 'mask', ['token:read', 'token:update', 'token:create']),
        ],
      )
    ).key,
  /** A session a private application authorized with `redact` rules granting token:update on each token. */
  'session redact': async (w: World) => {
    const pub = await w.s.keyFor('public', ['token:create'])
    const { session_key, nonce } = await pub.client.sessions.create()
    await w.s.client.sessions.authorize({
      nonce,
      rules: w.ids.map((id, i) =>
        rule(i + 1, { conditions: [{ attribute: 'id', operator: 'equals', value: id }] }, 'redact', [
          'token:update',
        ]),
      ),
    })
    return session_key
  },
}

const MASKS: [string, Json][] = [
  ['{{ data | json: "$" }}', '{{ data | json: "$" }}'],
  ['{ "number": "{{ data.number }}" }', { number: '{{ data.number }}' }],
  ['{{ data }}', '{{ data }}'],
]

/** Nothing of the card's number beyond its last 4 appears anywhere in `value`. */
const hidesCard = (value: unknown) => expect(JSON.stringify(value)).not.toContain(CARD.slice(0, 12))

/** The card is as it was: its mask, containers and what a masked reader sees. */
async function cardUnchanged(w: World) {
  const stored = await w.s.client.tokens.get('card-1')
  expect(stored.mask).toEqual(CARD_MASK)
  expect(stored.containers).toEqual(['/pci/high/'])
  expect(stored.search_indexes).toBeUndefined()
  expect(stored.fingerprint_expression).toBeUndefined()
  expect((await w.masked.client.tokens.get('card-1')).data).toEqual({ number: `${'X'.repeat(12)}4242` })
}

for (const transport of ['in-process', 'http'] as const) {
  for (const [kind, keyOf] of Object.entries(KINDS)) {
    describe(`${kind} key over ${transport}: a write shows no more than a read`, () => {
      const attacker = async () => {
        const w = await world()
        return { w, caller: callerFor(w, await keyOf(w), transport) }
      }

      for (const [name, mask] of MASKS) {
        it(`refuses a mask of ${name} with 403, and every reader still sees the old mask`, async () => {
          const { w, caller } = await attacker()
          const answer = await caller.update('card-1', { mask })
          expect(answer.status).toBe(403)
          hidesCard(answer.body)
          await cardUnchanged(w)
        })
      }

      it('refuses moving a /pci/ card to /general/ with 403; it stays unreadable revealed there', async () => {
        const { w, caller } = await attacker()
        const answer = await caller.update('card-1', { containers: ['/general/high/'] })
        expect(answer.status).toBe(403)
        hidesCard(answer.body)
        await cardUnchanged(w)
        expect((await caller.get('card-1')).body.data).not.toBe(CARD)
        expect(JSON.stringify((await caller.get('card-1')).body)).not.toContain(CARD)
        const other = await callerFor(w, w.generalRevealer.key, transport).get('card-1')
        expect(other.status).toBe(403)
      })

      it('refuses new search indexes and a new fingerprint expression with 403', async () => {
        const { w, caller } = await attacker()
        for (const patch of [
          { search_indexes: ['{{ data.number | slice: 0, 1 }}'] },
          { fingerprint_expression: '{{ data.number | slice: 0, 1 }}' },
          { mask: null },
        ]) {
          const answer = await caller.update('card-1', patch)
          expect(answer.status, JSON.stringify(patch)).toBe(403)
        }
        await cardUnchanged(w)
      })

      it('refuses a mask that fails on the stored data with 403, quoting nothing of it', async () => {
        const { w, caller } = await attacker()
        const answer = await caller.update('ssn-1', { mask: '{{ data | plus: 1 }}' })
        expect(answer.status).toBe(403)
        expect(JSON.stringify(answer.body)).not.toContain('536')
        expect((await w.s.client.tokens.get('ssn-1')).mask).toBe('{{ data | reveal_last: 4 }}')
      })

      it('refuses removing the field a custom mask shows, which would fall back to the secret one', async () => {
        const { w, caller } = await attacker()
        const answer = await caller.update('fb-1', { data: { shown: null } })
        expect(answer.status).toBe(403)
        hidesCard(answer.body)
        expect((await w.masked.client.tokens.get('fb-1')).data).toBe('public part')
      })

      it('refuses moving the digit a metadata-reading fingerprint expression hashes', async () => {
        const { w, caller } = await attacker()
        const before = (await w.s.client.tokens.get('fp-1')).fingerprint
        const answer = await caller.update('fp-1', { metadata: { at: '0' } })
        expect(answer.status).toBe(403)
        const after = await w.s.client.tokens.get('fp-1')
        expect(after.metadata).toEqual({ at: '15' })
        expect(after.fingerprint).toBe(before)
      })

      it('may still replace data whole and change metadata; readers see the mask of the new data', async () => {
        const { w, caller } = await attacker()
        const answer = await caller.update('ssn-1', { data: '123-45-6789', metadata: { k: 'v' } })
        expect(answer.status).toBe(200)
        expect(JSON.stringify(answer.body)).not.toContain('123-45')
        expect((await w.masked.client.tokens.get('ssn-1')).data).toBe('XXX-XX-6789')
        expect((await caller.update('card-1', { metadata: { k: 'v' } })).status).toBe(200)
      })

      it('refuses the same changes staged in a transaction; nothing is committed', async () => {
        const w = await world()
        const keyText = await keyOf(w)
        // A session and a public app open their own transactions as the reference allows.
        const tx = await w.s.service.connect(keyText).transactions.create()
        const c = callerFor(w, keyText, transport)
        for (const patch of [{ mask: '{{ data }}' }, { containers: ['/general/high/'] }]) {
          const answer = await c.update('card-1', patch, tx.id)
          expect(answer.status, JSON.stringify(patch)).toBe(403)
          hidesCard(answer.body)
        }
        await w.s.service.connect(keyText).transactions.commit(tx.id)
        await cardUnchanged(w)
      })

      it('answers an allowed write under its own read access: never more than a read shows', async () => {
        const { w, caller } = await attacker()
        const answer = await caller.update('card-1', { metadata: { seen: 'yes' } })
        expect(answer.status).toBe(200)
        hidesCard(answer.body)
        const read = await callerFor(w, await keyOf(w), transport).get('card-1')
        if (kind === 'private masked') {
          expect(answer.body.data).toEqual({ number: `${'X'.repeat(12)}4242` })
          expect(read.body.data).toEqual(answer.body.data)
        } else {
          // No read access: the answer carries no data at all.
          expect(answer.body).not.toHaveProperty('data')
          expect(read.status).toBe(403)
        }
        expect((await w.s.client.tokens.get('card-1')).metadata).toEqual({ seen: 'yes' })
      })
    })
  }

  describe(`a caller that reads revealed, over ${transport}`, () => {
    it('may change the mask and move the token; the answer shows the new mask', async () => {
      const w = await world()
      const caller = callerFor(w, w.s.vault.keys.private, transport)
      const answer = await caller.update('card-1', { mask: '{{ data.number | slice: 0, 6 }}' })
      expect(answer.status).toBe(200)
      expect(answer.body.data).toBe(CARD.slice(0, 6))
      expect((await caller.update('card-1', { containers: ['/general/high/'] })).status).toBe(200)
      expect((await callerFor(w, w.generalRevealer.key, transport).get('card-1')).body.data).toEqual({
        number: CARD,
      })
    })

    it('gets a 400 naming the field, not the stored value, when a new expression fails on the data', async () => {
      const w = await world()
      const caller = callerFor(w, w.s.vault.keys.private, transport)
      for (const [patch, field] of [
        [{ mask: '{{ data | plus: 1 }}' }, 'mask'],
        [{ mask: { a: { b: '{{ data | times: 2 }}' } } }, 'mask.a.b'],
        [{ fingerprint_expression: '{{ data | minus: 1 }}' }, 'fingerprint_expression'],
        [{ search_indexes: ['{{ data }}', '{{ data | divided_by: 3 }}'] }, 'search_indexes.1'],
      ] as const) {
        const answer = await caller.update('ssn-1', patch as Json)
        expect(answer.status, field).toBe(400)
        expect(JSON.stringify(answer.body), field).not.toContain('536')
        expect(JSON.stringify(answer.body), field).not.toContain('8413')
        expect(Object.keys((answer.body.errors ?? {}) as object), field).toEqual([field])
      }
      expect((await w.s.client.tokens.get('ssn-1')).mask).toBe('{{ data | reveal_last: 4 }}')
    })

    it('keeps a limit named in the answer when an expression over stored data passes it', async () => {
      const w = await world()
      const caller = callerFor(w, w.s.vault.keys.private, transport)
      const answer = await caller.update('ssn-1', {
        mask: '{{ data | pad_left: 999990 | append: data | append: data }}',
      })
      expect(answer.status).toBe(400)
      expect(String(answer.body.detail)).toMatch(/longer than \d+ characters/)
      expect(JSON.stringify(answer.body)).not.toContain('8413')
    })

    it('still gets the reason when the failing expression is its own input, at create', async () => {
      const w = await world()
      const created = await inProcess(() =>
        w.s.client.tokens.create({ type: 'token', data: 'abc', mask: '{{ data | plus: 1 }}' }),
      )
      expect(created.status).toBe(400)
      expect(created.body.detail).toContain('needs a number')
    })
  })
}

describe('withoutStoredValues: what a failure over stored data may say', () => {
  const said = (message: string) => {
    const error = new ServiceError('validation_failed', `mask: ${message}`, { issues: { mask: [message] } })
    return (withoutStoredValues(error) as ServiceError).issues!['mask']![0]
  }

  it('drops a reason that quotes a value, keeps one that only names a limit', () => {
    expect(said(`needs a number, not "${SSN}"`)).toBe(FAILS_ON_STORED_DATA)
    expect(said('needs a number, not [5,3,6]')).toBe(FAILS_ON_STORED_DATA)
    expect(said('needs an integer length')).toBe(FAILS_ON_STORED_DATA)
    expect(said('at most 3 items, not {"a":"536"}')).toBe(FAILS_ON_STORED_DATA)
    expect(said('makes more than 8000000 characters in all')).toBe(
      'makes more than 8000000 characters in all',
    )
    expect(said('is too large to evaluate')).toBe('is too large to evaluate')
  })

  it('leaves other errors as they are', () => {
    const forbidden = new ServiceError('forbidden', 'missing token:update access to token x')
    expect(withoutStoredValues(forbidden)).toBe(forbidden)
  })
})
