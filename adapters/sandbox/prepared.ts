import type { QuickJSContext, QuickJSHandle, QuickJSRuntime } from 'quickjs-emscripten-core'
import type { EgressLimits, EgressRequest, EgressResponse } from '../../src/kernel/index.js'
import { type BridgeRun, bridgeRun } from './crypto-bridge.js'
import type { RunResult } from './thrown.js'

/** Bytes in a MiB. */
export const MIB = 1024 * 1024

/**
 * Makes one request of a run's `fetch`, from outside the engine (the worker hands it to the host,
 * which calls the service's egress client). Rejects with an `EgressError` whose message the
 * formula may see; any other rejection reads "the request could not be made".
 */
export type HostFetch = (request: EgressRequest, limits: EgressLimits) => Promise<EgressResponse>

/** A runtime and context ready for one run. */
export interface Prepared {
  runtime: QuickJSRuntime
  context: QuickJSContext
  logs: string[]
  deadline: number
  /** The run's time limit (ms). */
  timeoutMs: number
  stringify: QuickJSHandle
  /** The run driver's `keep` and `start` (adapters/sandbox/prelude/driver.js). */
  keep: QuickJSHandle
  start: QuickJSHandle
  /** Why the driver's `start` stopped before the formula's function answered, when it did. */
  stopped?: RunResult
  /** The prelude's modules, once a run has used them. */
  modules?: QuickJSHandle
  /** The prelude's timer hook (`pumpTimers(fire)`), once the prelude is loaded. */
  pumpTimers?: QuickJSHandle
  /** The prelude's hook settling a `fetch` (`deliverFetch(id, ok, payload)`), once the prelude is loaded. */
  deliverFetch?: QuickJSHandle
  /** The run's requests, when `fetch` is allowed. */
  io?: Io
  /** The run's digests and random bytes, made by the host. */
  bridge: BridgeRun
  /** The prelude's program text (adapters/sandbox/prelude-source.ts). */
  prelude: string
}

/** Requests a run made through `fetch`: at most `MAX_FETCHES` per run, the host making each. */
export interface Io {
  /** Makes each request (see `HostFetch`). */
  fetch: HostFetch
  started: number
  inflight: Map<number, AbortController>
  completed: { id: number; ok: boolean; payload: string }[]
  /** Wakes the run's loop when a request completes. */
  wake: (() => void) | undefined
  ended: boolean
}

/** Resets the host side of a run (the engine's side is the snapshot's) for a run of `timeoutMs` ending at `deadline`. */
export function fresh(prepared: Prepared, deadline: number, timeoutMs: number, memoryMb: number): void {
  prepared.deadline = deadline
  prepared.timeoutMs = timeoutMs
  prepared.logs = []
  prepared.bridge = bridgeRun(deadline, memoryMb * MIB)
  delete prepared.modules
  delete prepared.pumpTimers
  delete prepared.deliverFetch
  delete prepared.io
  delete prepared.stopped
}
