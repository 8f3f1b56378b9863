import { type ChildProcess, spawn } from 'node:child_process'
import type { RunOutcome } from '../../src/runner.js'
import { CHILD_SOURCE } from './child.js'

/** One run's answer from a sandbox process: kind (`O` ok, `I` can't load, `T` threw), text, extra. */
export type Result = [kind: 'O' | 'I' | 'T', text: string, extra: string | number]

/** A message from a sandbox process: `ready` once, then answers to batch `b` (`done` on the last). */
export type Reply = { ready?: 1; b?: number; r?: Result[]; done?: 1 }

/** The flag that turns on Node's permission model (no filesystem, child processes or workers), if any. */
function permissionFlags(): string[] {
  const flags = process.allowedNodeEnvironmentFlags
  if (flags.has('--permission')) return ['--permission']
  if (flags.has('--experimental-permission')) return ['--experimental-permission']
  return []
}

/**
 * Starts one sandbox process: this Node binary running the sandbox program from a string (no file
 * to read), under the permission model, with an empty environment, no stdin or stdout, stderr
 * piped (for crash reports), a heap limit of `memoryMb`, and a JSON IPC channel.
 */
export function spawnSandbox(settings: {
  memoryMb: number
  maxResultChars: number
  maxContexts: number
}): ChildProcess {
  const config = JSON.stringify({
    maxResultChars: settings.maxResultChars,
    maxContexts: settings.maxContexts,
  })
  return spawn(
    process.execPath,
    [
      ...permissionFlags(),
      '--no-warnings',
      `--max-old-space-size=${settings.memoryMb}`,
      '-e',
      CHILD_SOURCE,
      '--',
      config,
    ],
    { stdio: ['ignore', 'ignore', 'pipe', 'ipc'], env: {}, serialization: 'json' },
  )
}

/** The outcome a sandbox answer stands for. */
export function toOutcome([kind, text, extra]: Result): RunOutcome {
  if (kind === 'O') {
    try {
      return { ok: true, value: JSON.parse(text), logs: JSON.parse(String(extra)) as string[] }
    } catch {
      return { ok: false, kind: 'thrown', message: 'the formula answered something that is not JSON' }
    }
  }
  if (kind === 'I') return { ok: false, kind: 'invalid', message: text }
  const status = Number(extra)
  return status
    ? { ok: false, kind: 'thrown', message: text, status }
    : { ok: false, kind: 'thrown', message: text }
}
