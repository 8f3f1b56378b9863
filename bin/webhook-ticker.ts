import type { Service } from '../src/service/index.js'

/** How often the CLI looks for webhook deliveries and callbacks whose time has come (ms). */
export const DELIVERY_TICK_MS = 1_000

/**
 * Runs `service.admin.webhooks.startDue()` at once (what a restart left pending goes out) and then
 * every `DELIVERY_TICK_MS`, never two passes at a time; a tick waits for the pass before it, never
 * for the attempts it started (a receiver that does not answer held every later tick, and so every
 * other tenant's retries, until its attempts ended). `stop()` ends it (the service's close waits for
 * attempts under way).
 */
export function webhookTicker(service: Service, onError: (error: unknown) => void): { stop(): void } {
  let running = false
  const tick = () => {
    if (running) return
    running = true
    service.admin.webhooks
      .startDue()
      .catch(onError)
      .finally(() => {
        running = false
      })
  }
  tick()
  const timer = setInterval(tick, DELIVERY_TICK_MS)
  timer.unref()
  return { stop: () => clearInterval(timer) }
}
