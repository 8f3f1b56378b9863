import type { OutboxEntry } from '../kernel/index.js'
import { ServiceError } from '../kernel/index.js'
import { openValue, sealedVersion, sealValue } from './keyring.js'
import type { Sealing } from './sealing.js'

/**
 * Sealing of outbox entries that may hold token data: an asynchronous react's entry (its detokenized
 * arguments in `body`, its answer in `result`) and a callback's entry (the react's answer in `body`).
 * Webhook events hold no data (see src/webhooks/events.ts) and pass through in the clear.
 */

/** The marker a sealed `body` or `result` starts with (plain JSON text never does). */
const PREFIX = 'sealed:'

/** The additional authenticated data of a sealed field: the entry's tenant, id and the field's name. */
const aad = (e: OutboxEntry, field: 'body' | 'result') =>
  `tokenvault:outbox:v1:${e.tenant_id}:${e.id}:${field}`

/** Whether an entry's kind may hold token data, so its `body` and `result` are sealed (a webhook event's never are). */
export const outboxSealsData = (e: OutboxEntry) => e.kind === 'react' || e.kind === 'callback'

/** The error an unreadable entry answers with: it names the entry, never its bytes. */
const unreadable = (id: string) =>
  new ServiceError('unreadable', `the stored outbox entry ${id} fails its integrity check and can't be read`)

/** An outbox entry as stored: `body` and `result` of a react or callback entry sealed under the tenant's key. */
export async function sealOutbox(s: Sealing, entry: OutboxEntry): Promise<OutboxEntry> {
  if (!outboxSealsData(entry)) return entry
  const key = await s.sealKeyOf(entry.tenant_id)
  const seal = (field: 'body' | 'result', text: string) =>
    text.startsWith(PREFIX) ? text : PREFIX + sealValue(key, text, aad(entry, field))
  const sealed: OutboxEntry = { ...entry, body: seal('body', entry.body) }
  if (entry.result !== undefined) sealed.result = seal('result', entry.result)
  return sealed
}

/** The data-key versions a stored entry's sealed fields are under (none when nothing is sealed). */
export function outboxVersions(entry: OutboxEntry): number[] {
  const fields = entry.result === undefined ? [entry.body] : [entry.body, entry.result]
  return fields.filter((f) => f.startsWith(PREFIX)).map((f) => sealedVersion(f.slice(PREFIX.length)))
}

/** A stored outbox entry opened; one whose sealed fields fail their integrity check is `unreadable`. */
export async function openOutbox(s: Sealing, entry: OutboxEntry): Promise<OutboxEntry> {
  if (!outboxSealsData(entry)) return entry
  const open = async (field: 'body' | 'result', text: string) => {
    if (!text.startsWith(PREFIX)) return text
    const payload = text.slice(PREFIX.length)
    try {
      const value = openValue(
        await s.keyOf(entry.tenant_id, sealedVersion(payload)),
        payload,
        aad(entry, field),
      )
      if (typeof value !== 'string') throw new Error('not text')
      return value
    } catch {
      throw unreadable(entry.id)
    }
  }
  const opened: OutboxEntry = { ...entry, body: await open('body', entry.body) }
  if (entry.result !== undefined) opened.result = await open('result', entry.result)
  return opened
}
