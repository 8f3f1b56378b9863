// The public face of this folder: what other folders of src/ (and the adapters) import. Kept by hand.

export type { WebhookAdmin } from './admin.js'
export { webhookAdmin } from './admin.js'
export type { DispatcherDeps } from './deps.js'
export {
  ATTEMPT_TIMEOUT_MS,
  CLAIM_MS,
  DELIVERY_ATTEMPTS,
  DELIVERY_SHARE,
  Dispatcher,
  FINISHED_KEPT_MS,
  FIRST_RETRY_MS,
  IN_FLIGHT,
  IN_FLIGHT_PER_TENANT,
  retryDelayMs,
} from './dispatcher.js'
export type { CallEnd, DerivedEvent, ReactorEnd, ReactorInvocation } from './events.js'
export {
  EVENT_TYPES,
  eventsOf,
  invocationEvents,
  reactorEvents,
  SENT_EVENT_TYPES,
} from './events.js'
export {
  DEFAULT_PENDING_DELIVERIES_PER_TENANT,
  eventBody,
  eventEnvelope,
  MAX_WEBHOOKS_PER_TENANT,
  pendingEntry,
  webhookEffect,
} from './outbox.js'
export type { WebhookRuntime } from './runtime.js'
export { webhookRuntime } from './runtime.js'
export type { CreateWebhookInput, ListWebhooksQuery, UpdateWebhookInput } from './schemas.js'
export { createWebhookInput, listWebhooksQuery, updateWebhookInput } from './schemas.js'
export { deliveryRequest } from './send.js'
export type { WebhookSigner } from './signing.js'
export {
  isTestSigningKey,
  SIGNATURE_HEADER,
  SIGNATURE_VERSION,
  SIGNATURE_VERSION_HEADER,
  stableJson,
  stableStringify,
  verifyWebhookSignature,
  webhookSigner,
} from './signing.js'
export { TEST_WEBHOOK_PRIVATE_KEY, TEST_WEBHOOK_PUBLIC_KEY } from './test-key.js'
export type { Webhook } from './webhooks.js'
export { webhookOperations } from './webhooks.js'
