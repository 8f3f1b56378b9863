import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  createSecretKey,
  hash,
  randomBytes,
  randomUUID,
} from 'node:crypto'
import * as v from 'valibot'
import { authorizeSessionInput } from '../src/sessions/schemas.js'
import { copy } from '../src/store/json.js'
import { createTokenInput } from '../src/tokens/schemas.js'
import { built } from './built.js'
import { type BenchOptions, type BenchRow, compare } from './harness.js'

const GOAL = '≤ 3×'

/** A vault with one tenant, a full-access key, and a parent token with 20 children. */
export async function coreFixture() {
  const {
    entry: { createService, manualClock },
    memory: { memoryStore },
  } = await built()
  const clock = manualClock()
  // The audit log is on by default; BENCH_AUDIT_LOG=off measures the core without it.
  const service = createService({
    store: memoryStore(),
    clock,
    auditLog: process.env.BENCH_AUDIT_LOG !== 'off',
  })
  const tenant = await service.admin.createTenant({ name: 'bench' })
  const perms = ['token:create', 'token:read', 'token:update', 'token:delete', 'token:use'] as const
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'srv',
    type: 'private',
    permissions: [...perms],
  })
  const pub = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'web',
    type: 'public',
    permissions: ['token:create'],
  })
  // A key that reads tokens whole (the floor answers the data as stored), and the same permissions
  // reading them masked (`token:read` without a reveal rule).
  const revealing = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'reader',
    type: 'private',
    permissions: [...perms],
    rules: [
      { description: 'all', priority: 1, container: '/', transform: 'reveal', permissions: [...perms] },
    ],
  })
  const client = service.connect(key)
  const body = {
    type: 'card',
    data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 },
    metadata: { owner: 'ann' },
  }
  const parent = await client.tokens.create(body)
  for (let i = 0; i < 20; i++) await client.tokens.children.create(parent.id, body)
  return {
    service,
    client,
    reader: service.connect(revealing.key),
    publicClient: service.connect(pub.key),
    parent,
    body,
  }
}

/** In-process client operations on the memory store against the floor of unavoidable work. */
export async function run(opts: BenchOptions): Promise<BenchRow[]> {
  const { client, reader, publicClient, parent, body } = await coreFixture()
  const map = new Map<string, unknown>()
  const record = (id: string) => ({
    ...v.parse(createTokenInput, body),
    id,
    tenant_id: 't',
    containers: ['/general/high/'],
    created_by: 'a',
    created_at: '2030-01-01T00:00:00.000Z',
  })
  const sample = record(parent.id)
  for (let i = 0; i < 20; i++) map.set(`c${i}`, copy(sample))
  map.set(parent.id, copy(sample))
  const timing = opts.quick ? { rounds: 3, ms: 50 } : { rounds: 7, ms: 250 }
  const rows: BenchRow[] = []
  const add = async (
    operation: string,
    op: () => Promise<unknown>,
    baseline: string,
    floor: () => unknown,
    goal = GOAL,
  ) => {
    const r = await compare(op, floor, timing)
    rows.push({
      group: 'core (memory store)',
      operation,
      opsPerSec: r.op,
      baseline,
      baselineOpsPerSec: r.baseline,
      ratio: r.ratio,
      goal,
    })
  }

  // What a vault with encryption at rest does at least per create: the body parsed and validated,
  // a random id, the data and its mask encrypted (one AES-256-GCM call, reused KeyObject), a keyed
  // fingerprint (HMAC-SHA-256), the record kept, a copy answered.
  const floorKey = createSecretKey(randomBytes(32))
  const hmacKey = createSecretKey(randomBytes(32))
  const createFloor = () => {
    const id = randomUUID()
    const input = v.parse(createTokenInput, body)
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', floorKey, iv)
    cipher.setAAD(Buffer.from(`t:${id}`))
    const sealed = Buffer.concat([cipher.update(JSON.stringify([input.data, null])), cipher.final()])
    const fingerprint = createHmac('sha256', hmacKey).update(JSON.stringify(input.data)).digest('base64url')
    const { data: _data, ...rest } = record(id)
    map.set(id, { ...rest, fingerprint, data: { iv, sealed, tag: cipher.getAuthTag() } })
    const answer = copy({ ...rest, fingerprint, data: input.data })
    map.delete(id)
    return answer
  }
  await add(
    'tokens.create',
    () => client.tokens.create(body),
    'parse + randomUUID + AES-256-GCM encrypt + HMAC fingerprint + Map.set(copy)',
    createFloor,
  )
  // The floor of a get with encryption at rest: the stored record, its fields decrypted (one
  // AES-256-GCM call with a reused KeyObject), a copy answered.
  const aesKey = createSecretKey(randomBytes(32))
  const sealedFields = (() => {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', aesKey, iv)
    cipher.setAAD(Buffer.from(`t:${parent.id}`))
    const body = cipher.update(JSON.stringify([sample.data, { number: 'XXXXXXXXXXXX4242' }]))
    cipher.final()
    return { iv, body, tag: cipher.getAuthTag() }
  })()
  map.set('sealed', { ...sample, data: sealedFields })
  const getFloor = () => {
    const { data: s, ...rest } = map.get('sealed') as { data: typeof sealedFields }
    const decipher = createDecipheriv('aes-256-gcm', aesKey, s.iv)
    decipher.setAAD(Buffer.from(`t:${parent.id}`))
    decipher.setAuthTag(s.tag)
    const plain = decipher.update(s.body)
    decipher.final()
    const [data, mask] = JSON.parse(plain.toString('utf8')) as [unknown, unknown]
    return copy({ ...rest, data, mask })
  }
  await add(
    'tokens.get (data revealed)',
    () => reader.tokens.get(parent.id),
    'Map.get + AES-256-GCM decrypt + copy',
    getFloor,
    '≤ 2×',
  )
  await add(
    'tokens.get (masked: the card mask evaluated)',
    () => client.tokens.get(parent.id),
    'Map.get + AES-256-GCM decrypt + copy (no mask)',
    getFloor,
    '—',
  )
  let n = 0
  const tokens: string[] = []
  for (let i = 0; i < 200; i++) tokens.push((await client.tokens.create(body)).id)
  await add(
    'tokens.children.link + unlink',
    async () => {
      const child = tokens[n++ % tokens.length]!
      await client.tokens.children.link(parent.id, child)
      await client.tokens.children.unlink(parent.id, child)
    },
    '2 × (2 Map.get(copy) + Map.set/delete)',
    () => {
      for (let i = 0; i < 2; i++) {
        copy(map.get(parent.id))
        copy(map.get('c1'))
        map.set('link', copy({ parent: parent.id, child: 'c1', created_at: '2030-01-01T00:00:00.000Z' }))
        map.delete('link')
      }
    },
  )
  await add(
    'tokens.children.list (page of 20)',
    () => client.tokens.children.list(parent.id),
    '20 × (Map.get + AES-256-GCM decrypt + copy)',
    () => {
      const out = []
      for (let i = 0; i < 20; i++) out.push(getFloor())
      return out
    },
  )
  await add(
    'sessions.create + authorize',
    async () => {
      const s = await publicClient.sessions.create()
      await client.sessions.authorize({ nonce: s.nonce, permissions: ['token:read'] })
    },
    'two random secrets, two SHA-256, two Map writes (+ parse, copies)',
    () => {
      // create: a session key and a nonce, the nonce's hash kept; authorize: the nonce hashed and
      // looked up, the session rewritten with its permissions.
      const key = randomBytes(24).toString('base64url')
      const nonce = randomBytes(24).toString('base64url')
      const id = randomUUID()
      map.set(
        hash('sha256', nonce, 'base64'),
        copy({ id, key_hash: hash('sha256', key, 'base64'), expires_at: '2030-01-01T00:03:00.000Z' }),
      )
      const input = v.parse(authorizeSessionInput, { nonce, permissions: ['token:read'] })
      const found = copy(map.get(hash('sha256', input.nonce, 'base64'))) as Record<string, unknown>
      map.set(String(found['id']), copy({ ...found, permissions: input.permissions }))
      map.delete(String(found['id']))
    },
    '≤ 4×',
  )

  // One caller waiting on a disk or a database between calls runs each call cold: the machine's
  // caches have moved on while it waited. The same create, and the create floor above, timed one at
  // a time after 5 ms of sleep, against back to back (medians of wall time per call).
  const perCall = async (fn: () => unknown, idleMs: number, calls: number) => {
    const times: number[] = []
    for (let i = 0; i < calls; i++) {
      if (idleMs > 0) await new Promise((r) => setTimeout(r, idleMs))
      const t = performance.now()
      await fn()
      times.push(performance.now() - t)
    }
    return times.sort((a, b) => a - b)[Math.floor(times.length / 2)]! * 1000
  }
  const calls = opts.quick ? 40 : 400
  const create = () => client.tokens.create(body)
  const hot = await perCall(create, 0, calls)
  const cold = await perCall(create, 5, calls)
  const floorHot = await perCall(createFloor, 0, calls)
  const floorCold = await perCall(createFloor, 5, calls)
  rows.push({
    group: 'core (memory store)',
    operation: 'tokens.create 5 ms after the last call (one caller that waits between calls)',
    opsPerSec: 1e6 / cold,
    baseline: 'the same create back to back',
    baselineOpsPerSec: 1e6 / hot,
    ratio: cold / hot,
    note: `median ${cold.toFixed(0)} µs vs ${hot.toFixed(0)} µs a call; the create floor ${floorCold.toFixed(0)} µs vs ${floorHot.toFixed(0)} µs`,
  })
  return rows
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import('./report.js')
  printRows(await run({ quick: process.env.BENCH_QUICK === '1' }))
}
