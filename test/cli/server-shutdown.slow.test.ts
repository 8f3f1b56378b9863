/**
 * SIGTERM under load: 16 keep-alive clients send requests back to back while the server is told to
 * stop. A request whose bytes were handed to the kernel before the signal was sent must be answered,
 * never reset: the server closes a connection only between requests. Requests sent after the signal
 * may be refused (the listener closes) and are counted apart.
 */
import { Agent, request } from 'node:http'
import { expect, it } from 'vitest'
import { start } from './spawn.js'

const CLIENTS = 16

interface Tally {
  answered: number
  /** Requests sent in the first `window` ms after the signal that were not answered. */
  lostInWindow: number
  resetBefore: number
  resetAfter: number
  refusedAfter: number
  otherErrors: string[]
  /** When SIGTERM was sent (performance.now()), and the window after it counted in `lostInWindow`. */
  signalledAt: number
  window: number
}

/** A GET on `agent`; whether its bytes were sent before `signalled()` turned true, and how it ended. */
function get(url: string, agent: Agent, signalled: () => boolean, onSent = () => {}) {
  return new Promise<{ sentBefore: boolean; sentAt: number; outcome: 'answered' | string }>((resolve) => {
    let sentBefore = false
    let sentAt = Number.NaN
    const req = request(url, { agent }, (res) => {
      res.resume()
      res.on('end', () => resolve({ sentBefore, sentAt, outcome: 'answered' }))
      res.on('error', (error: NodeJS.ErrnoException) =>
        resolve({ sentBefore, sentAt, outcome: error.code ?? 'error' }),
      )
    })
    // 'finish': the whole request was handed to the kernel.
    req.on('finish', () => {
      sentBefore = !signalled()
      sentAt = performance.now()
      onSent()
    })
    req.on('error', (error: NodeJS.ErrnoException) =>
      resolve({ sentBefore, sentAt, outcome: error.code ?? 'error' }),
    )
    req.end()
  })
}

/** One client: requests back to back on one keep-alive connection until the server is gone. */
async function client(url: string, signalled: () => boolean, gone: () => boolean, tally: Tally) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  try {
    while (!gone()) {
      const { sentBefore, sentAt, outcome } = await get(`${url}/healthz`, agent, signalled)
      if (outcome !== 'answered' && sentAt - tally.signalledAt < tally.window) tally.lostInWindow++
      if (outcome === 'answered') tally.answered++
      else if (outcome === 'ECONNRESET' || outcome === 'EPIPE') {
        if (sentBefore) tally.resetBefore++
        else tally.resetAfter++
      } else if (outcome === 'ECONNREFUSED' && signalled()) {
        tally.refusedAfter++
        return
      } else tally.otherErrors.push(outcome)
    }
  } finally {
    agent.destroy()
  }
}

/** A request on a connection of its own, answering once its bytes were handed to the kernel. */
function fresh(url: string, signalled: () => boolean, tally: Tally) {
  const agent = new Agent({ keepAlive: false })
  let sent: () => void = () => {}
  const written = new Promise<void>((resolve) => {
    sent = resolve
  })
  const done = get(`${url}/healthz`, agent, signalled, () => sent()).then(({ sentBefore, outcome }) => {
    sent()
    if (outcome === 'answered') tally.answered++
    else if (outcome === 'ECONNRESET' || outcome === 'EPIPE')
      tally[sentBefore ? 'resetBefore' : 'resetAfter']++
    else tally.otherErrors.push(outcome)
  })
  return { written, done }
}

/**
 * Starts a server, loads it with 16 clients, sends SIGTERM mid-load, and tallies the outcomes.
 * With `paused`, the server is stopped (SIGSTOP) first, 16 more requests are sent on new
 * connections while it cannot read them, then SIGTERM and SIGCONT: at the signal the server holds
 * requests whose bytes it has not read yet, on connections it has not even accepted.
 */
async function stopUnderLoad(extra: string[], paused = false, window = 0) {
  const cli = start(['serve', '--port', '0', '--store', 'memory', '--log', 'none', ...extra])
  const url = (await cli.line(1)).slice('listening on '.length)
  let signalled = false
  let exited = false
  void cli.exited.then(() => {
    exited = true
  })
  const tally: Tally = {
    answered: 0,
    lostInWindow: 0,
    resetBefore: 0,
    resetAfter: 0,
    refusedAfter: 0,
    otherErrors: [],
    signalledAt: Number.POSITIVE_INFINITY,
    window,
  }
  const clients = Array.from({ length: CLIENTS }, () =>
    client(
      url,
      () => signalled,
      () => exited,
      tally,
    ),
  )
  // Load first: every client has been answered many times, so every connection is a reused one.
  while (tally.answered < 500) await new Promise((resolve) => setTimeout(resolve, 5))
  const late: ReturnType<typeof fresh>[] = []
  if (paused) {
    cli.child.kill('SIGSTOP')
    for (let i = 0; i < CLIENTS; i++) late.push(fresh(url, () => signalled, tally))
    await Promise.all(late.map((f) => f.written))
  }
  signalled = true
  tally.signalledAt = performance.now()
  cli.child.kill('SIGTERM')
  if (paused) cli.child.kill('SIGCONT')
  const [code] = await cli.exited
  const exitMs = Math.round(performance.now() - tally.signalledAt)
  await Promise.all([...clients, ...late.map((f) => f.done)])
  return { code, tally, exitMs }
}

it('SIGTERM under 16 keep-alive clients: no request sent before it is reset, in 3 rounds', async () => {
  for (let round = 0; round < 3; round++) {
    const { code, tally, exitMs } = await stopUnderLoad([])
    console.log(`round ${round} (no delay, exit after ${exitMs} ms):`, JSON.stringify(tally))
    expect(code).toBe(0)
    expect(tally.resetBefore).toBe(0)
    expect(tally.otherErrors).toEqual([])
  }
}, 120_000)

it('SIGTERM while 16 more requests wait unread on new connections (server paused): none is reset, in 3 rounds', async () => {
  for (let round = 0; round < 3; round++) {
    const { code, tally, exitMs } = await stopUnderLoad([], true)
    console.log(`round ${round} (paused, exit after ${exitMs} ms):`, JSON.stringify(tally))
    expect(code).toBe(0)
    expect(tally.resetBefore).toBe(0)
    expect(tally.otherErrors).toEqual([])
  }
}, 120_000)

it('SIGTERM with --shutdown-delay-ms 1000 under 16 keep-alive clients: what is sent in the first 500 ms is answered', async () => {
  for (let round = 0; round < 3; round++) {
    const { code, tally, exitMs } = await stopUnderLoad(['--shutdown-delay-ms', '1000'], false, 500)
    console.log(`round ${round} (1000 ms delay, exit after ${exitMs} ms):`, JSON.stringify(tally))
    expect(code).toBe(0)
    expect(tally.resetBefore).toBe(0)
    expect(tally.lostInWindow).toBe(0)
    // The listener served through the delay: the process exits after it, not before.
    expect(exitMs).toBeGreaterThanOrEqual(1000)
    expect(tally.otherErrors).toEqual([])
  }
}, 120_000)
