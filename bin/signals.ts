/** What SIGINT and SIGTERM do to `tokenvault serve`, from before it starts until it exits. */

/** What the signal handlers stop: the running server (`close`, `hurry`). */
export interface Stoppable {
  close(): Promise<void>
  hurry(): void
}

/**
 * Installs the SIGINT and SIGTERM handlers, before anything starts (a signal during start-up, even
 * right after the `listening` line, is a clean stop, never the default death by signal, exit 143):
 *
 * - the first signal aborts `stopped` (start-up stops at its next step: the store wait included)
 *   or, once `serving` was called, shuts the server down and exits 0 (1 if shutdown failed);
 * - a second one ends the shutdown delay at once; requests in flight are still answered (a
 *   terminal's Ctrl+C reaches both `npm start` and the server, which then sees it twice);
 * - a third one exits at once, with code 1.
 */
export function stopOnSignals(note: (line: string, level?: string) => void): {
  stopped: AbortSignal
  serving(running: Stoppable): void
} {
  const controller = new AbortController()
  let server: Stoppable | undefined
  let count = 0
  const closeAndExit = (running: Stoppable) => {
    running.close().then(
      () => process.exit(0),
      (error: unknown) => {
        note(`shutdown failed: ${String(error)}`, 'error')
        process.exit(1)
      },
    )
  }
  const onSignal = (signal: NodeJS.Signals) => {
    count++
    if (count === 1) {
      note(`${signal}: shutting down`)
      controller.abort()
      if (server) closeAndExit(server)
    } else if (count === 2) {
      note(
        `${signal} again: not waiting any longer for new requests; finishing those in flight (a third signal exits now)`,
      )
      server?.hurry()
    } else {
      note(`${signal} a third time: exiting now`, 'warn')
      process.exit(1)
    }
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  return {
    /** Aborted by the first signal. */
    stopped: controller.signal,
    /** Hands over the started server: a signal already received shuts it down now. */
    serving(running: Stoppable) {
      server = running
      if (controller.signal.aborted) closeAndExit(running)
    },
  }
}
