/**
 * `fdSink`, the writer of the server's log: in order, never blocking the caller, bounded in memory
 * (what it drops it counts and says), and quiet once its reader is gone.
 */
import { execFileSync } from 'node:child_process'
import fs, { closeSync, createReadStream, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it, vi } from 'vitest'
import { fdSink } from '../../bin/log-sink.js'

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'tv-log-'))
  dirs.push(dir)
  return dir
}
const lineOf = (i: number) => `line ${i} ${'x'.repeat(90)}\n`

/** A FIFO in a temporary directory, its read stream (opening in the thread pool) and its write end. */
async function fifo() {
  const path = join(tempDir(), 'fifo')
  execFileSync('mkfifo', [path])
  const reader = createReadStream(path)
  // Let the reader's open start in the thread pool: opening the write end waits for a reader.
  await new Promise((resolve) => setImmediate(resolve))
  return { reader, fd: openSync(path, 'w') }
}

it('writes every line, in order, and drained() waits for the last', async () => {
  const path = join(tempDir(), 'log')
  const fd = openSync(path, 'w')
  const sink = fdSink(fd)
  for (let i = 0; i < 2000; i++) sink.write(lineOf(i))
  await sink.drained()
  closeSync(fd)
  expect(readFileSync(path, 'utf8')).toBe(Array.from({ length: 2000 }, (_, i) => lineOf(i)).join(''))
  expect(sink.dropped).toBe(0)
})

it('while its reader is stopped: returns at once, keeps at most maxPendingBytes, counts and says what it dropped', async () => {
  // A FIFO whose reader pauses: the pipe fills, and the sink's write waits in the thread pool.
  const { reader, fd } = await fifo()
  reader.pause()
  const sink = fdSink(fd, { maxPendingBytes: 100_000 })
  const total = 20_000 // about 2 MB: the pipe holds 64 KiB, the sink 100 000 bytes
  // With the reader stopped, a write that waited for the pipe would never return: these return.
  for (let i = 0; i < total; i++) sink.write(lineOf(i))
  expect(sink.dropped).toBeGreaterThan(10_000)

  const chunks: Buffer[] = []
  reader.on('data', (chunk) => chunks.push(Buffer.from(chunk)))
  reader.resume()
  await sink.drained()
  closeSync(fd)
  await new Promise<void>((resolve) => reader.once('close', () => resolve()))
  const lines = Buffer.concat(chunks).toString('utf8').split('\n').filter(Boolean)
  const numbers = lines.filter((l) => l.startsWith('line ')).map((l) => Number(l.split(' ')[1]))
  // What came is in order, none twice; the rest is counted in the one note.
  for (let i = 1; i < numbers.length; i++) expect(numbers[i]!).toBeGreaterThan(numbers[i - 1]!)
  const notes = lines.filter((l) => l.includes('log lines dropped'))
  expect(notes).toEqual([`tokenvault: ${sink.dropped} log lines dropped (the log's reader fell behind)`])
  expect(numbers.length + sink.dropped).toBe(total)
})

it('stops quietly once its reader is gone (EPIPE): no throw, drained() resolves', async () => {
  const { reader, fd } = await fifo()
  reader.destroy()
  await new Promise<void>((resolve) => reader.once('close', () => resolve()))
  const sink = fdSink(fd)
  for (let i = 0; i < 100; i++) sink.write(lineOf(i))
  await sink.drained()
  expect(() => sink.write(lineOf(100))).not.toThrow()
  await sink.drained()
  sink.flushSync()
  closeSync(fd)
})

it('flushSync writes what waits at once', async () => {
  const path = join(tempDir(), 'log')
  const fd = openSync(path, 'w')
  const sink = fdSink(fd)
  sink.write('first\n') // goes out through the thread pool
  sink.write('second\n')
  sink.write('third\n')
  sink.flushSync()
  // The queued lines are on disk now; the first may still be in flight in the thread pool.
  expect(readFileSync(path, 'utf8')).toContain('second\nthird\n')
  // The descriptor is closed once that write has landed: closed under it, its number goes to the
  // next file opened (the next test's), and the write lands there.
  for (let i = 0; i < 500 && !readFileSync(path, 'utf8').includes('first\n'); i++)
    await new Promise((resolve) => setTimeout(resolve, 10))
  closeSync(fd)
  expect(readFileSync(path, 'utf8')).toContain('first\n')
})

it('a burst of lines goes out in a few writes, not one per line', async () => {
  const path = join(tempDir(), 'log')
  const fd = openSync(path, 'w')
  // sonic-boom writes through the fs module object: its writes are counted here.
  const writes = vi.spyOn(fs, 'write')
  try {
    const sink = fdSink(fd)
    for (let i = 0; i < 1000; i++) sink.write(lineOf(i)) // about 100 kB in one turn
    await sink.drained()
    closeSync(fd)
    expect(readFileSync(path, 'utf8')).toBe(Array.from({ length: 1000 }, (_, i) => lineOf(i)).join(''))
    // The first line goes alone; the rest wait for it and go in chunks of at most 16 KiB.
    expect(writes.mock.calls.length).toBeGreaterThanOrEqual(1)
    expect(writes.mock.calls.length).toBeLessThanOrEqual(20)
  } finally {
    writes.mockRestore()
  }
})
