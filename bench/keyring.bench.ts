/**
 * The keyring's AES-256-GCM against the cheapest AES-256-GCM call Node offers on the same bytes, in
 * process, alternating rounds (`compare`): a sealed card token's fields (`data` and `mask`, 160 B of
 * JSON) with its AAD. The floor is the faster of two bare calls measured in the same run
 * (`createCipheriv` / `createDecipheriv` with a reused `KeyObject`, or with the raw key bytes;
 * `randomBytes(12)` for the IV; `setAAD`, `update`, `final`, tag), and neither assembles an output.
 * Rows: `sealBytes` / `openBytes` against it (goal ≤ 1.2×), `sealValue` / `openValue` against the
 * floor plus the `JSON.stringify` + base64 (or base64 + `JSON.parse`) they add, and the keyring as
 * it was (key bytes, `Buffer.concat`) for comparison.
 * Run alone: `npx tsx bench/keyring.bench.ts` (`BENCH_QUICK=1` for a short run).
 */
import { createCipheriv, createDecipheriv, createSecretKey, type KeyObject, randomBytes } from 'node:crypto'
import { openBytes, openValue, sealBytes, sealValue, tenantKey } from '../src/encryption/keyring.js'
import { type BenchOptions, type BenchRow, compare } from './harness.js'

const FIELDS = [
  { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' },
  { number: 'XXXXXXXXXXXX4242', expiration_month: 12, expiration_year: 2030 },
]
const AAD = 'tokenvault:token:v1:7d3c5a1e-0000-4000-8000-000000000000:9b1f2c3d-0000-4000-8000-000000000000'

/** The bare encrypt call: no output assembled, the pieces dropped. */
function bareSeal(key: KeyObject | Buffer, plaintext: Buffer, aad: Buffer): number {
  const cipher = createCipheriv('aes-256-gcm', key, randomBytes(12))
  cipher.setAAD(aad)
  const body = cipher.update(plaintext)
  cipher.final()
  return body.length + cipher.getAuthTag().length
}

/** The bare decrypt call over IV ‖ ciphertext ‖ tag. */
function bareOpen(key: KeyObject | Buffer, sealed: Buffer, aad: Buffer): number {
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, 12))
  decipher.setAAD(aad)
  decipher.setAuthTag(sealed.subarray(sealed.length - 16))
  const body = decipher.update(sealed.subarray(12, sealed.length - 16))
  decipher.final()
  return body.length
}

/** The keyring as it was: raw key bytes on every call, `Buffer.concat` of the pieces. */
function oldSeal(key: Buffer, plaintext: Buffer, aad: string): Buffer {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  cipher.setAAD(Buffer.from(aad, 'utf8'))
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()])
  return Buffer.concat([iv, body, cipher.getAuthTag()])
}
function oldOpen(key: Buffer, sealed: Buffer, aad: string): Buffer {
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, 12))
  decipher.setAAD(Buffer.from(aad, 'utf8'))
  decipher.setAuthTag(sealed.subarray(sealed.length - 16))
  return Buffer.concat([decipher.update(sealed.subarray(12, sealed.length - 16)), decipher.final()])
}

const us = (opsPerSec: number) => `${(1e6 / opsPerSec).toFixed(2)} µs`

export async function run(opts: BenchOptions): Promise<BenchRow[]> {
  const timing = opts.quick ? { rounds: 3, ms: 60 } : { rounds: 9, ms: 200 }
  const tenant = tenantKey(randomBytes(32))
  const raw = tenant.encryption.export()
  const keyObject = createSecretKey(raw)
  const plaintext = Buffer.from(JSON.stringify(FIELDS), 'utf8')
  const aad = Buffer.from(AAD, 'utf8')
  const sealed = sealBytes(tenant.encryption, plaintext, aad)
  const sealedText = sealed.toString('base64')
  const rows: BenchRow[] = []

  /** The faster of the two bare calls, measured in alternating rounds. */
  const floorOf = async (withObject: () => unknown, withBytes: () => unknown) => {
    const r = await compare(withObject, withBytes, timing)
    return r.op >= r.baseline ? { fn: withObject, name: 'KeyObject' } : { fn: withBytes, name: 'key bytes' }
  }
  const add = async (
    operation: string,
    op: () => unknown,
    floor: () => unknown,
    floorName: string,
    goal = '',
  ) => {
    const r = await compare(op, floor, timing)
    rows.push({
      group: 'keyring (AES-256-GCM)',
      operation,
      opsPerSec: r.op,
      baseline: floorName,
      baselineOpsPerSec: r.baseline,
      ratio: r.ratio,
      goal,
      note: `${us(r.op)} vs ${us(r.baseline)}`,
    })
  }

  const sealFloor = await floorOf(
    () => bareSeal(keyObject, plaintext, aad),
    () => bareSeal(raw, plaintext, aad),
  )
  const openFloor = await floorOf(
    () => bareOpen(keyObject, sealed, aad),
    () => bareOpen(raw, sealed, aad),
  )
  const sealName = `bare createCipheriv (${sealFloor.name}), same bytes`
  const openName = `bare createDecipheriv (${openFloor.name}), same bytes`
  await add('sealBytes', () => sealBytes(tenant.encryption, plaintext, aad), sealFloor.fn, sealName, '≤ 1.2×')
  await add('openBytes', () => openBytes(tenant.encryption, sealed, aad), openFloor.fn, openName, '≤ 1.2×')
  await add(
    'sealValue (JSON + base64)',
    () => sealValue(tenant, FIELDS, AAD),
    () => {
      const bytes = Buffer.from(JSON.stringify(FIELDS), 'utf8')
      sealFloor.fn()
      return bytes.toString('base64')
    },
    `${sealName} + JSON.stringify + base64`,
    '≤ 1.2×',
  )
  await add(
    'openValue (base64 + JSON)',
    () => openValue(tenant, sealedText, AAD),
    () => {
      Buffer.from(sealedText, 'base64')
      openFloor.fn()
      return JSON.parse(plaintext.toString('utf8'))
    },
    `${openName} + base64 + JSON.parse`,
    '≤ 1.2×',
  )
  await add('the keyring as it was: seal', () => oldSeal(raw, plaintext, AAD), sealFloor.fn, sealName)
  await add('the keyring as it was: open', () => oldOpen(raw, sealed, AAD), openFloor.fn, openName)
  return rows
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import('./report.js')
  printRows(await run({ quick: process.env.BENCH_QUICK === '1' }))
}
