import sonicBoom from 'sonic-boom'

// sonic-boom is CommonJS: its class is a property of the module object Node gives as the default.
const { SonicBoom } = sonicBoom

/** What `fdSink` answers: a writer of log text, and what it has dropped so far. */
export interface LogSink {
  /** Queues `text` (whole lines) for writing; never blocks, never throws. */
  write(text: string): void
  /**
   * Writes what waits synchronously, for the process's last moments (its `exit` event). A chunk
   * whose write is under way in the thread pool at that moment may land after these lines, or not
   * at all if the process ends first; a graceful stop waits for `drained()` instead.
   */
  flushSync(): void
  /** Resolves once every queued line was written (or the descriptor failed). */
  drained(): Promise<void>
  /** Lines dropped because more than `maxPendingBytes` waited, in all. */
  readonly dropped: number
}

const linesIn = (text: string): number => {
  let lines = 0
  for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) lines++
  return Math.max(1, lines)
}

/**
 * Writes log text to the file descriptor `fd` (stderr: 2) without ever blocking the event loop,
 * through `sonic-boom` (pino's writer): each chunk is written by libuv's thread pool, one write at a
 * time and in order; text logged while a write runs waits, and the next write takes all of it (so a
 * burst goes out in a few writes, not one per line). A reader that drains a pipe slowly (a busy
 * process reading the server's stderr) then slows only the log, not requests: `process.stderr` on a
 * pipe or file writes synchronously, so a full pipe would stop the server.
 *
 * Memory stays bounded: once more than `maxPendingBytes` wait (4 MiB unless given), further lines are
 * dropped and counted, and one line saying how many were dropped goes out once the backlog is written.
 * A descriptor that fails (the reader gone: EPIPE) stops the sink; what waits is discarded.
 */
export function fdSink(fd: number, { maxPendingBytes = 4 * 1024 * 1024 } = {}): LogSink {
  // Busy descriptors (EAGAIN: a non-blocking pipe that is full) are retried after 100 ms.
  const boom = new SonicBoom({ fd, maxLength: maxPendingBytes, retryEAGAIN: () => true })
  let broken = false
  let busy = false
  let dropped = 0
  let reported = 0
  let waiters: (() => void)[] = []

  const settle = () => {
    busy = false
    const done = waiters
    waiters = []
    for (const resolve of done) resolve()
  }
  const send = (text: string): boolean => {
    const before = dropped
    boom.write(text)
    if (dropped !== before) return false
    busy = true
    return true
  }
  boom.on('drop', (text: string) => {
    dropped += linesIn(text)
  })
  boom.on('drain', () => {
    // The backlog is out: say what was dropped while it waited, then report the sink idle.
    const skipped = dropped - reported
    if (skipped > 0) {
      reported = dropped
      send(`tokenvault: ${skipped} log lines dropped (the log's reader fell behind)\n`)
      return
    }
    settle()
  })
  boom.on('error', () => {
    broken = true
    settle()
  })
  return {
    write(text) {
      if (broken || text === '') return
      send(text)
    },
    flushSync() {
      if (broken || !busy) return
      try {
        boom.flushSync()
      } catch {
        broken = true
        settle()
      }
    },
    drained() {
      if (broken || !busy) return Promise.resolve()
      return new Promise((resolve) => waiters.push(resolve))
    },
    get dropped() {
      return dropped
    },
  }
}
