import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { onTestFinished } from 'vitest'
import { crc32 } from '../../adapters/file/crc32.js'
import { RECORD_HEADER_BYTES } from '../../adapters/file/record.js'

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

/**
 * Frames a JSON payload (the text of an array) as one journal record or snapshot frame, as the
 * journal does: for tests that write files by hand (records of earlier versions, damaged frames).
 */
export function encodeRecord(json: string): Buffer {
  const length = Buffer.byteLength(json)
  const record = Buffer.allocUnsafe(RECORD_HEADER_BYTES + length)
  record.write(json, RECORD_HEADER_BYTES, 'utf8')
  record.writeUInt32LE(length, 0)
  record.writeUInt32LE(crc32(record.subarray(RECORD_HEADER_BYTES)), 4)
  return record
}
