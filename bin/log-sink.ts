import { write, writeSync } from 'node:fs'

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
  /** Lines dropped because more than `maxPendingChars` waited, in all. */
  readonly dropped: number
}

/** How long a write that found the descriptor full (EAGAIN) waits before trying again. */
const RETRY_MS = 10

/**
 * Writes log text to the file descriptor `fd` (stderr: 2) without ever blocking the event loop.
 * Each chunk is written by libuv's thread pool (`fs.write`), one write at a time and in order;
 * text logged while a write runs waits, and the next write takes all of it. A reader that drains a
 * pipe slowly (a busy process reading the server's stderr) then slows only the log, not requests:
 * `process.stderr` on a pipe or file writes synchronously, so a full pipe used to stop the server.
 *
 * Memory stays bounded: once more than `maxPendingChars` wait (4 Mi characters unless given), further
 * lines are dropped and counted, and one line saying how many were dropped goes out with the next
 * write. A descriptor that fails (the reader gone: EPIPE) stops the sink; what waits is discarded.
 */
export function fdSink(fd: number, { maxPendingChars = 4 * 1024 * 1024 } = {}): LogSink {
  let queue: string[] = []
  let queued = 0
  let writing = false
  let broken = false
  let dropped = 0
  let reported = 0
  let waiters: (() => void)[] = []

  const settle = () => {
    if (writing || queue.length > 0) return
    const done = waiters
    waiters = []
    for (const resolve of done) resolve()
  }
  const take = (): string => {
    const skipped = dropped - reported
    reported = dropped
    const text = queue.join('')
    queue = []
    queued = 0
    return skipped > 0
      ? `${text}tokenvault: ${skipped} log lines dropped (the log's reader fell behind)\n`
      : text
  }
  const fail = () => {
    broken = true
    writing = false
    queue = []
    queued = 0
    settle()
  }
  const send = (bytes: Buffer, at: number): void => {
    write(fd, bytes, at, bytes.length - at, null, (error, written) => {
      if (error) {
        if ((error as NodeJS.ErrnoException).code === 'EAGAIN') {
          setTimeout(() => send(bytes, at), RETRY_MS).unref()
          return
        }
        fail()
        return
      }
      if (at + written < bytes.length) return send(bytes, at + written)
      writing = false
      pump()
    })
  }
  const pump = () => {
    if (writing || broken) return
    if (queue.length === 0) return settle()
    writing = true
    send(Buffer.from(take(), 'utf8'), 0)
  }
  return {
    write(text) {
      if (broken || text === '') return
      if (queued + text.length > maxPendingChars) {
        let lines = 0
        for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) lines++
        dropped += Math.max(1, lines)
        return
      }
      queue.push(text)
      queued += text.length
      pump()
    },
    flushSync() {
      if (broken || queue.length === 0) return
      const bytes = Buffer.from(take(), 'utf8')
      try {
        for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, bytes.length - at)
      } catch {
        fail()
      }
    },
    drained() {
      if (broken || (!writing && queue.length === 0)) return Promise.resolve()
      return new Promise((resolve) => waiters.push(resolve))
    },
    get dropped() {
      return dropped
    },
  }
}
