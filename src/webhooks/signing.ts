import {
  constants,
  createPrivateKey,
  createPublicKey,
  createVerify,
  generateKeyPairSync,
  type KeyObject,
  sign,
} from 'node:crypto'
import { availableParallelism } from 'node:os'
import { TEST_WEBHOOK_PRIVATE_KEY, TEST_WEBHOOK_PUBLIC_KEY } from './test-key.js'

/**
 * The reference's v1 webhook signature (developers.basistheory.com, "Webhooks › Signature
 * Verification"): the delivered body, parsed and serialized again with its object keys sorted
 * (`json-stable-stringify`), signed with RSA-PSS over SHA-256; the signature travels base64 in the
 * `BT-SIGNATURE` header, the version (`v1`) in `BT-SIGNATURE-VERSION`. A receiver verifies with the
 * public key: `crypto.createVerify('SHA256')`, `RSA_PKCS1_PSS_PADDING`, exactly as the reference's
 * sample does.
 */

/** The signature header and the version header of a delivery, as the reference names them. */
export const SIGNATURE_HEADER = 'BT-SIGNATURE'
export const SIGNATURE_VERSION_HEADER = 'BT-SIGNATURE-VERSION'
export const SIGNATURE_VERSION = 'v1'

/**
 * JSON with every object's keys in sorted (code unit) order, as `json-stable-stringify` writes it:
 * what is signed. `undefined` members are left out, as `JSON.stringify` does.
 */
export function stableStringify(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null'
  if (Array.isArray(value)) return `[${value.map((item) => stableStringify(item ?? null)).join(',')}]`
  const record = value as Record<string, unknown>
  const parts: string[] = []
  for (const key of Object.keys(record).sort()) {
    if (record[key] === undefined) continue
    parts.push(`${JSON.stringify(key)}:${stableStringify(record[key])}`)
  }
  return `{${parts.join(',')}}`
}

/**
 * Whether JSON.stringify writes `value` exactly as `stableStringify` does: every object's keys are
 * already in sorted order (`Object.keys` puts integer-like keys first, so those fail unless they
 * sort so as text too), and nothing in it is a function, a symbol or has `toJSON`, which the two
 * write differently.
 */
function inStableOrder(value: unknown): boolean {
  if (value === null || typeof value !== 'object')
    return typeof value !== 'function' && typeof value !== 'symbol'
  if (Array.isArray(value)) {
    for (const item of value) if (!inStableOrder(item)) return false
    return true
  }
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return false
  const record = value as Record<string, unknown>
  const keys = Object.keys(record)
  for (let i = 0; i < keys.length; i++) {
    if (i > 0 && keys[i - 1]! >= keys[i]!) return false
    const item = record[keys[i]!]
    if (item !== undefined && !inStableOrder(item)) return false
  }
  return true
}

/**
 * `stableStringify(value)`, written by JSON.stringify when `value`'s objects were built with their
 * keys in order (a check of about 1 µs for an event, against the 5–10 µs `stableStringify` takes).
 */
export function stableJson(value: unknown): string {
  return inStableOrder(value) ? (JSON.stringify(value) ?? 'null') : stableStringify(value)
}

/** A signing key pair: the private half signs, the public half (PEM) is what receivers verify with. */
export interface WebhookSigner {
  /**
   * The base64 signature of `body` (a JSON text): over its stable serialization. Signed on libuv's
   * thread pool (`crypto.sign` with a callback): an RSA signature takes milliseconds of CPU, which
   * would otherwise hold up every request of the process.
   */
  sign(body: string): Promise<string>
  /** The same signature, of `text` that is its own stable serialization (`stableStringify`'s output) and signed as it is. */
  signStable(text: string): Promise<string>
  /** The public key, SPKI PEM: what a receiver verifies with. */
  publicKey: string
}

/**
 * Signatures one signer makes at once: one core fewer than the machine has (at least one). An RSA
 * signature takes about 1.5 ms of CPU; unbounded, a burst of deliveries took every core of the
 * thread pool and the requests that made them waited for a core. Past it, deliveries wait their turn
 * (they are in the outbox already: a burst's deliveries go out a little later, none is lost).
 */
export const SIGNING_AT_ONCE = Math.max(1, availableParallelism() - 1)

/**
 * A signer over `privateKeyPem` (an RSA private key, PEM). Without one it signs with a key pair made
 * for this signer alone, on first use (never the published test key, which proves nothing: the test
 * kit and test mode pass that one explicitly). Makes at most `atOnce` signatures at a time, the rest
 * wait in order (at most the dispatcher's attempts in flight).
 */
export function webhookSigner(privateKeyPem?: string, atOnce = SIGNING_AT_ONCE): WebhookSigner {
  // The published test key is known to be good: it is imported on first use, so a test service (a
  // test vault, each of its forks) does not pay a third of a millisecond at start for a key it may
  // never sign with. Any other key is checked, and refused, at once.
  const known = privateKeyPem === undefined || privateKeyPem === TEST_WEBHOOK_PRIVATE_KEY
  let key: KeyObject | undefined = known ? undefined : rsaKey(privateKeyPem)
  let publicKey: string | undefined
  const current = () => {
    key ??=
      privateKeyPem === undefined
        ? generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey
        : rsaKey(privateKeyPem)
    return key
  }
  const turns = { running: 0, waiting: [] as (() => void)[] }
  const signOne = (text: string) =>
    new Promise<string>((resolve, reject) => {
      const data = Buffer.from(text)
      sign(
        'sha256',
        data,
        { key: current(), padding: constants.RSA_PKCS1_PSS_PADDING },
        (error, signature) => (error ? reject(error) : resolve(signature.toString('base64'))),
      )
    })
  return {
    get publicKey() {
      publicKey ??= createPublicKey(current()).export({ type: 'spki', format: 'pem' }).toString()
      return publicKey
    },
    sign: (body) => inTurn(turns, atOnce, () => signOne(stableStringify(JSON.parse(body)))),
    signStable: (text) => inTurn(turns, atOnce, () => signOne(text)),
  }
}

/** Runs `work` when fewer than `atOnce` are running, else after those waiting before it. */
async function inTurn<T>(
  turns: { running: number; waiting: (() => void)[] },
  atOnce: number,
  work: () => Promise<T>,
): Promise<T> {
  if (turns.running >= atOnce) await new Promise<void>((go) => turns.waiting.push(go))
  else turns.running++
  try {
    return await work()
  } finally {
    // The turn passes to the next waiting signature, or is given back.
    const next = turns.waiting.shift()
    if (next) next()
    else turns.running--
  }
}

function rsaKey(privateKeyPem: string): KeyObject {
  const key = createPrivateKey(privateKeyPem)
  if (key.asymmetricKeyType !== 'rsa') throw new TypeError('webhookSigningKey: an RSA private key (PEM)')
  return key
}

/**
 * Whether `privateKeyPem` is the published test key (its public half is `TEST_WEBHOOK_PUBLIC_KEY`),
 * however it is written. A text that is not a key is not it.
 */
export function isTestSigningKey(privateKeyPem: string): boolean {
  if (privateKeyPem === TEST_WEBHOOK_PRIVATE_KEY) return true
  try {
    const spki = createPublicKey(createPrivateKey(privateKeyPem)).export({ type: 'spki', format: 'pem' })
    return spki.toString().trim() === TEST_WEBHOOK_PUBLIC_KEY.trim()
  } catch {
    return false
  }
}

/**
 * Whether `signature` (base64, the `BT-SIGNATURE` header) signs `body` (the delivery's body as
 * received) under `publicKeyPem`: the reference's verification, for tests and host apps. Never throws:
 * a body that is not JSON, or a signature that is not base64, does not verify.
 */
export function verifyWebhookSignature(body: string, signature: string, publicKeyPem: string): boolean {
  try {
    const verifier = createVerify('SHA256')
    verifier.update(stableStringify(JSON.parse(body)))
    return verifier.verify(
      { key: publicKeyPem, padding: constants.RSA_PKCS1_PSS_PADDING },
      Buffer.from(signature, 'base64'),
    )
  } catch {
    return false
  }
}
