/**
 * A server whose log nobody reads keeps serving: `tokenvault serve` with its stderr a pipe that the
 * parent does not drain (a stuck log shipper, a paused pager) answers every request, and the lines
 * arrive, in order, once the reader reads again.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { expect, it } from 'vitest'
import { root } from './spawn.js'

it('answers requests while nothing reads its log, and the log arrives in order once read', async () => {
  const tsx = import.meta.resolve('tsx')
  const child = spawn(
    process.execPath,
    ['--import', tsx, join(root, 'bin/tokenvault.ts'), 'serve', '--port', '0', '--store', 'memory'],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  try {
    // stderr is not read (no listener, paused): the pipe fills after about 64 KiB.
    child.stderr!.pause()
    const first = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).once('line', resolve)
      child.once('exit', (code) => reject(new Error(`the CLI exited (${code})`)))
    })
    const url = first.slice('listening on '.length)
    // 400 requests of about 1 KiB of log each: six times what the pipe holds.
    const padding = 'p'.repeat(1000)
    // A server blocked on the full pipe would never answer: each request is given up after 30 s.
    for (let i = 0; i < 400; i++) {
      const response = await fetch(`${url}/nowhere/${i}/${padding}`, { signal: AbortSignal.timeout(30_000) })
      expect(response.status).toBe(404)
      await response.arrayBuffer()
    }

    // Read again: every line comes, in order.
    const seen: number[] = []
    const reader = createInterface({ input: child.stderr! })
    const all = new Promise<void>((resolve) => {
      reader.on('line', (line) => {
        const found = / \/nowhere\/(\d+)\//.exec(line)
        if (found) seen.push(Number(found[1]))
        if (seen.length === 400) resolve()
      })
    })
    child.stderr!.resume()
    await Promise.race([
      all,
      new Promise((_, reject) => setTimeout(() => reject(new Error(`${seen.length} lines read`)), 30_000)),
    ])
    expect(seen).toEqual(Array.from({ length: 400 }, (_, i) => i))
  } finally {
    child.kill('SIGKILL')
    if (child.exitCode === null) await once(child, 'exit')
  }
}, 120_000)
