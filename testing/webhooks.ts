import type { OutboxEntry } from '../src/kernel/index.js'
import type { TestService } from '../src/service/index.js'
import { SIGNATURE_HEADER, verifyWebhookSignature } from '../src/webhooks/index.js'

/** A delivery as a receiver got it: its body text and headers (any case; `vault.proxy.received()` gives these). */
export interface ReceivedDelivery {
  body: string
  headers: Record<string, string>
}

/** The test vault's webhook deliveries: see `TestVault.webhooks`. */
export interface WebhookKit {
  /** The public key deliveries are signed with (the published test key unless the service was given one). */
  readonly publicKey: string
  /**
   * Whether a received delivery's `BT-SIGNATURE` signs its body under `publicKey`: the reference's
   * verification (RSA-PSS, SHA-256, over the body with its keys sorted).
   */
  verify(delivery: ReceivedDelivery): boolean
  /** The tenant's deliveries, oldest first: what was sent, its state, each attempt's outcome. */
  deliveries(): Promise<OutboxEntry[]>
  /** Attempts every delivery due at the clock's time now and waits for them. */
  deliverDue(): Promise<number>
  /** Deliver now: every pending delivery at once, past its back-off, without moving the clock. */
  deliverNow(): Promise<number>
  /** Deliver again: a delivered (or failed) delivery once more, to test a receiver's duplicate handling. */
  deliverAgain(id: string): Promise<OutboxEntry>
}

/** The webhook kit of one tenant of a test-mode service. */
export function webhookKit(service: TestService, tenantId: string): WebhookKit {
  const hooks = service.admin.webhooks
  return {
    // Read when asked: the key is imported on first use, so a vault (or a fork) that never asks pays nothing.
    get publicKey() {
      return hooks.publicKey
    },
    verify(delivery) {
      const name = SIGNATURE_HEADER.toLowerCase()
      const signature = Object.entries(delivery.headers).find(([k]) => k.toLowerCase() === name)?.[1]
      return signature !== undefined && verifyWebhookSignature(delivery.body, signature, hooks.publicKey)
    },
    deliveries: () => hooks.deliveries(tenantId, { limit: 1000 }),
    deliverDue: () => hooks.deliverDue(),
    deliverNow: () => hooks.deliverNow(tenantId),
    deliverAgain: (id) => hooks.deliverAgain(tenantId, id),
  }
}
