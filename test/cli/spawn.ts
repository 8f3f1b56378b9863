import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { afterEach } from 'vitest'

/** The repository's root directory. */
export const root = fileURLToPath(new URL('../../', import.meta.url))
const children: ChildProcess[] = []

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL')
})

/**
 * Starts the CLI from source (`bin/tokenvault.ts` through tsx) in `cwd` with `env` added, and
 * collects its stdout lines and stderr; killed after the test if still running.
 */
export function start(args: string[], cwd = root, env: Record<string, string> = {}) {
  const tsx = import.meta.resolve('tsx')
  const child = spawn(process.execPath, ['--import', tsx, join(root, 'bin/tokenvault.ts'), ...args], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.push(child)
  const lines: string[] = []
  const waiters: (() => void)[] = []
  createInterface({ input: child.stdout! }).on('line', (line) => {
    lines.push(line)
    for (const wake of waiters.splice(0)) wake()
  })
  let stderr = ''
  child.stderr!.on('data', (d) => {
    stderr += d
  })
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>
  /** Waits until stdout has `n` lines (or the process exits). */
  const line = async (n: number) => {
    while (lines.length < n) {
      const more = new Promise<void>((resolve) => waiters.push(resolve))
      const ended = await Promise.race([more.then(() => false), exited.then(() => true)])
      if (ended && lines.length < n) throw new Error(`the CLI exited early: ${stderr}`)
    }
    return lines[n - 1]!
  }
  return { child, lines, line, exited, stderr: () => stderr }
}
