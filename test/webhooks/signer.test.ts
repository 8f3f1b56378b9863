import { createPublicKey, generateKeyPairSync } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import {
  TEST_WEBHOOK_PRIVATE_KEY,
  TEST_WEBHOOK_PUBLIC_KEY,
  verifyWebhookSignature,
  webhookSigner,
} from '../../src/webhooks/index.js'

/** The published test key is imported on first use; any other key is checked when the signer is made. */
describe('the webhook signer', () => {
  it('refuses a key that is not an RSA private key at once, not at the first delivery', () => {
    expect(() => webhookSigner('not a key')).toThrow()
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({
      type: 'pkcs8',
      format: 'pem',
    })
    expect(() => webhookSigner(ec.toString())).toThrow(/RSA private key/)
  })

  it('signs with the published test key, imported when first used', async () => {
    const signer = webhookSigner(TEST_WEBHOOK_PRIVATE_KEY)
    const body = JSON.stringify({ b: 1, a: 'x' })
    const signature = await signer.sign(body)
    expect(verifyWebhookSignature(body, signature, TEST_WEBHOOK_PUBLIC_KEY)).toBe(true)
    const spki = (pem: string) => createPublicKey(pem).export({ type: 'spki', format: 'der' }).toString('hex')
    expect(spki(signer.publicKey)).toBe(spki(TEST_WEBHOOK_PUBLIC_KEY))
  })
})
