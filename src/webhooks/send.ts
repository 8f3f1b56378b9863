import type { OutboxAttempt, OutboxEntry } from '../kernel/index.js'
import { EGRESS_MAX_BODY_BYTES } from '../reactors/index.js'
import type { DispatcherDeps } from './deps.js'
import { STABLE_EVENT_START } from './outbox.js'
import { SIGNATURE_HEADER, SIGNATURE_VERSION, SIGNATURE_VERSION_HEADER, stableStringify } from './signing.js'

/** The most of a receiver's answer that is read (its status is what counts). */
const MAX_ANSWER_BYTES = 64 * 1024

/**
 * The request of one attempt: a webhook event as the reference delivers it (`{ event, delivered_at }`,
 * keys sorted, signed: `BT-SIGNATURE`, `BT-SIGNATURE-VERSION: v1`), or a callback's body as stored.
 */
export async function deliveryRequest(
  deps: Pick<DispatcherDeps, 'signer'>,
  entry: OutboxEntry,
  now: string,
): Promise<{ body: string; headers: Record<string, string> }> {
  if (entry.kind === 'callback') {
    return {
      body: entry.body,
      headers: { 'content-type': 'application/json', 'user-agent': 'tokenvault-reactor-callback' },
    }
  }
  // An event written as its own stable serialization (`eventBody`) goes in as it is; one written
  // before bodies were (it starts `{"id":`) is parsed and serialized again.
  const body = entry.body.startsWith(STABLE_EVENT_START)
    ? `{"delivered_at":${JSON.stringify(now)},"event":${entry.body}}`
    : stableStringify({ event: JSON.parse(entry.body), delivered_at: now })
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'tokenvault-webhooks',
      [SIGNATURE_HEADER.toLowerCase()]: await deps.signer.signStable(body),
      [SIGNATURE_VERSION_HEADER.toLowerCase()]: SIGNATURE_VERSION,
    },
  }
}

/**
 * Attempts one delivery through the egress client, under the one allow-list (a url no longer on it
 * fails the attempt). Answers the attempt: `ok` for a 2xx, else the status or why there was none.
 * Never throws.
 */
export async function sendEntry(
  deps: DispatcherDeps,
  entry: OutboxEntry,
  timeoutMs: number,
): Promise<OutboxAttempt> {
  const at = deps.clock.now().toISOString()
  try {
    const { body, headers } = await deliveryRequest(deps, entry, at)
    const response = await deps.egress(
      deps.origins(),
      { url: entry.url, method: 'POST', headers, body },
      {
        timeoutMs,
        maxRequestBytes: 2 * EGRESS_MAX_BODY_BYTES,
        maxResponseBytes: MAX_ANSWER_BYTES,
        statusOnly: true,
      },
    )
    const ok = response.status >= 200 && response.status < 300
    return { at, ok, status: response.status }
  } catch (error) {
    const reason =
      error instanceof Error && error.name === 'EgressError' ? error.message : 'the request could not be made'
    return { at, ok: false, error: reason.slice(0, 300) }
  }
}
