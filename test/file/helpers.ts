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

/** The repository root, and the child-process script the crash tests run. */
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
