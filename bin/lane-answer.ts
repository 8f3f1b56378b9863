/**
 * How the heavy lane's thread answers one posted request (see `bin/lane-worker.ts`): through the
 * exchange of its HTTP handler, the answer's body as bytes of their own that move to the main
 * thread without a copy; a request whose handling threw is answered 503 with `Retry-After: 1`.
 */
import type { Incoming, Outgoing } from '../adapters/http/exchange.js'
import { TOO_LARGE, UNREADABLE } from '../adapters/http/exchange.js'
import type { ExchangeHandler } from '../adapters/http/handler.js'
import { problem } from '../adapters/http/problem.js'
import type { LaneAnswer, LaneRequest } from './heavy-lane.js'

/** The exchange view of a posted request, its chunks joined here (a single chunk as it is). */
export function incomingOf(m: LaneRequest): Incoming {
  const chunks = m.body
  const body = chunks === null ? null : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)
  return {
    method: m.method,
    target: m.target,
    header: (name) => m.headers[name] ?? null,
    headers: () => m.headers,
    mount: () => '',
    hasBody: () => body !== null || m.read !== 'whole',
    readBody: async (maxBytes) => {
      if (m.read === 'too large') return TOO_LARGE
      if (m.read === 'unreadable') return UNREADABLE
      return body !== null && body.byteLength > maxBytes ? TOO_LARGE : body
    },
  }
}

/** An answer's body as bytes of their own, which move to the main thread without a copy there. */
async function bytesOf(body: Outgoing['body']): Promise<Uint8Array | null> {
  if (body === null) return null
  if (typeof body === 'string') return new Uint8Array(Buffer.from(body))
  if (body instanceof Uint8Array) return new Uint8Array(body)
  return new Uint8Array(await new Response(body).arrayBuffer())
}

/**
 * The lane's answer to `m`, and a log line when its handling threw (the answer is then a 503). The
 * line names the error's kind only: what an error says may hold a request's data.
 */
export async function answerOnLane(
  exchange: ExchangeHandler,
  m: LaneRequest,
): Promise<{ answer: LaneAnswer; log?: string }> {
  try {
    const out = await exchange(incomingOf(m))
    const { status, headers, cookies } = out
    return {
      answer: { id: m.id, status, headers, ...(cookies ? { cookies } : {}), body: await bytesOf(out.body) },
    }
  } catch (error) {
    const out = problem(503, 'The request failed in its worker thread; it may be retried.', undefined, {
      'retry-after': '1',
    })
    const answer = { id: m.id, status: out.status, headers: out.headers, body: await bytesOf(out.body) }
    const kind = error instanceof Error ? error.name : typeof error
    return { answer, log: `heavy lane: a request failed (${kind})` }
  }
}
