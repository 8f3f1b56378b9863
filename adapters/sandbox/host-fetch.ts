import type { Worker } from 'node:worker_threads'
import { EGRESS_MAX_BODY_BYTES, EgressError, type EgressResponse } from '../../src/kernel/index.js'
import { type FetchedMessage, MAX_FETCHES, readFetchRequest, type WorkerMessage } from './messages.js'
import type { HostFetch } from './prepared.js'

/**
 * The host side of a run's `fetch`: the worker asks (a `fetch` message), the host makes the request
 * with the run's `HostFetch` (the service's egress client, called here in the host's thread, never
 * in the worker), and answers (a `fetched` message). What the worker sends is not trusted: numbers
 * in order, at most `MAX_FETCHES`, the request's shape checked again. Every request of a run is
 * aborted when the run ends, whichever way.
 */
export interface RunRequests {
  /** The run's id in the messages. */
  id: number
  /** Requests asked so far (the next is number `count + 1`). */
  count: number
  controllers: Set<AbortController>
}

/** The `fetch` message of a worker. */
type FetchMessage = Extract<WorkerMessage, { t: 'fetch' }>

/**
 * Starts the request `message` asks for run `requests.id` (limited to `timeoutMs`, the run's own
 * limit), answering the worker when it ends. False when the message breaks the protocol (the
 * caller discards the worker).
 */
export function startHostFetch(
  requests: RunRequests,
  message: FetchMessage,
  fetch: HostFetch,
  timeoutMs: number,
  worker: Worker,
): boolean {
  const request = readFetchRequest(message.request)
  if (!request || message.n !== requests.count + 1 || message.n > MAX_FETCHES) return false
  requests.count = message.n
  const controller = new AbortController()
  requests.controllers.add(controller)
  const limits = {
    timeoutMs: Math.max(0, Math.min(message.timeoutMs, timeoutMs)),
    maxRequestBytes: EGRESS_MAX_BODY_BYTES,
    maxResponseBytes: EGRESS_MAX_BODY_BYTES,
    signal: controller.signal,
  }
  const answer = (ok: boolean, payload: string) => {
    if (controller.signal.aborted) return
    requests.controllers.delete(controller)
    const fetched: FetchedMessage = { t: 'fetched', id: requests.id, n: message.n, ok, payload }
    worker.postMessage(fetched)
  }
  new Promise<EgressResponse>((resolve) => resolve(fetch(request, limits))).then(
    (response) => answer(true, JSON.stringify(response)),
    (error: unknown) =>
      answer(false, error instanceof EgressError ? error.message : 'the request could not be made'),
  )
  return true
}

/** Aborts the requests of a run that ended; their answers are dropped. */
export function endHostFetches(requests: RunRequests | undefined): void {
  if (!requests) return
  for (const controller of requests.controllers) controller.abort(new EgressError('the run ended'))
  requests.controllers.clear()
}
