import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { onTestFinished } from 'vitest'

/** A fresh temp directory, removed when the current test finishes. */
export async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tokenvault-file-'))
  onTestFinished(() => rm(dir, { recursive: true, force: true }))
  return dir
}

/** The repository root, and the child-process script the crash and lock tests run. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url))
export const CHILD = fileURLToPath(new URL('./child.ts', import.meta.url))

/** Starts `child.ts` under tsx with these arguments, its stdout piped. */
export function startChild(args: string[]): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
}

/** Resolves when the child has exited and its output streams are closed. */
export function closed(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      if (child.stdout?.readableEnded !== false) return resolve()
    }
    child.once('close', () => resolve())
  })
}

/** Resolves with the child's first stdout line that satisfies `match`, or rejects if it exits first. */
export function lineMatching(child: ChildProcess, match: (line: string) => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffered = ''
    let stderr = ''
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
    })
    const onData = (chunk: Buffer) => {
      buffered += chunk.toString()
      const lines = buffered.split('\n')
      buffered = lines.pop() ?? ''
      const found = lines.find(match)
      if (found !== undefined) {
        child.stdout?.off('data', onData)
        resolve(found)
      }
    }
    child.stdout?.on('data', onData)
    child.once('close', (code) => reject(new Error(`child exited (${code}) first: ${stderr}`)))
  })
}

/** Waits (up to 5 s) until a file store that refused writes after a failure takes them again. */
export async function healed(store: { stats(): { healthy: boolean } }): Promise<void> {
  const started = performance.now()
  while (!store.stats().healthy) {
    if (performance.now() - started > 5000) throw new Error('the store did not heal within 5 s')
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}
