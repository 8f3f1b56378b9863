import { describe, expect, it } from 'vitest'
import {
  TEST_WEBHOOK_PRIVATE_KEY,
  TEST_WEBHOOK_PUBLIC_KEY,
  verifyWebhookSignature,
  webhookSigner,
} from '../../src/webhooks/index.js'

/** A signer makes a bounded number of signatures at once; the others wait their turn, none is lost. */
describe('the webhook signer, one signature at a time', () => {
  it('signs 12 bodies asked at once, one at a time, each verifying, answered in the order asked', async () => {
    const signer = webhookSigner(TEST_WEBHOOK_PRIVATE_KEY, 1)
    const bodies = Array.from({ length: 12 }, (_, i) => JSON.stringify({ n: i }))
    const order: number[] = []
    const signatures = await Promise.all(
      bodies.map((body, i) =>
        signer.sign(body).then((signature) => {
          order.push(i)
          return signature
        }),
      ),
    )
    expect(order).toEqual(bodies.map((_, i) => i))
    for (const [i, body] of bodies.entries())
      expect(verifyWebhookSignature(body, signatures[i]!, TEST_WEBHOOK_PUBLIC_KEY)).toBe(true)
  })

  it('a body that fails gives its turn back: the signatures asked after it are made', async () => {
    const signer = webhookSigner(TEST_WEBHOOK_PRIVATE_KEY, 1)
    const bad = signer.sign('not json')
    const good = signer.sign('{"a":1}')
    await expect(bad).rejects.toThrow()
    expect(verifyWebhookSignature('{"a":1}', await good, TEST_WEBHOOK_PUBLIC_KEY)).toBe(true)
    expect(verifyWebhookSignature('{"b":2}', await signer.sign('{"b":2}'), TEST_WEBHOOK_PUBLIC_KEY)).toBe(
      true,
    )
  })
})
