/**
 * Durability observed, not counted: the store's own counters can't tell whether a commit reached
 * the disk, so the durability tests watch the system calls of a process that writes one token. A
 * write is acknowledged once its commit is on disk: before the process prints `ack`, the data file
 * must have been synced (fdatasync/fsync/msync of `data.mdb`), and every write to `data.mdb` in
 * between must either go through a descriptor opened with O_DSYNC/O_SYNC or be followed by such a
 * sync.
 */
import { spawn, spawnSync } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { expect } from 'vitest'
import { itNeeds } from '../environment.js'
import { closed, ROOT, tempDir } from './helpers.js'

/** Whether strace runs here (installed, and ptrace allowed). */
export const canTrace =
  spawnSync('strace', ['-f', '-o', '/dev/null', 'true'], { stdio: 'ignore' }).status === 0
export const itTraces = itNeeds(canTrace, 'strace (with ptrace allowed)', 'apt-get install -y strace')

/** One system call of the trace that matters here. */
export type Event =
  | { kind: 'open'; fd: string; path: string; synchronous: boolean }
  | { kind: 'sync'; fd: string | null; path: string }
  | { kind: 'write'; fd: string; path: string; text: string }

const SYNCS = new Set(['fsync', 'fdatasync', 'msync', 'sync_file_range'])

/**
 * Reads an `strace -f -y` log into events in the order they completed. A call split across lines
 * (`<unfinished ...>` … `<... name resumed>`) counts where it returns.
 */
export function parse(log: string): Event[] {
  const events: Event[] = []
  const pending = new Map<string, string>()
  for (const raw of log.split('\n')) {
    const pid = raw.match(/^(\d+)\s+/)?.[1] ?? ''
    let line = raw.slice(raw.match(/^\d+\s+/)?.[0].length ?? 0)
    if (line.endsWith('<unfinished ...>')) {
      pending.set(pid, line.slice(0, -'<unfinished ...>'.length))
      continue
    }
    const resumed = line.match(/^<\.\.\. (\w+) resumed>(.*)$/)
    if (resumed) {
      line = (pending.get(pid) ?? `${resumed[1]}(`) + resumed[2]
      pending.delete(pid)
    }
    const call = line.match(/^(\w+)\((.*)\)\s+=\s+(-?\d+)/)
    if (!call || Number(call[3]) < 0) continue
    const [, name, args, result] = call as unknown as [string, string, string, string]
    if (name === 'openat') {
      const path = args.match(/"([^"]*)"/)?.[1] ?? ''
      const fd = result
      events.push({ kind: 'open', fd, path, synchronous: /O_DSYNC|O_SYNC/.test(args) })
    } else if (SYNCS.has(name)) {
      const target = args.match(/^(\d+)<([^>]*)>/)
      events.push({
        kind: 'sync',
        fd: target?.[1] ?? null,
        path: target?.[2] ?? (name === 'msync' ? 'msync' : ''),
      })
    } else if (
      name === 'write' ||
      name === 'pwrite64' ||
      name === 'pwritev' ||
      name === 'pwritev2' ||
      name === 'writev'
    ) {
      const target = args.match(/^(\d+)<([^>]*)>/)
      if (target) events.push({ kind: 'write', fd: target[1]!, path: target[2]!, text: args })
    }
  }
  return events
}

/**
 * Runs `child` (a script taking a store directory and `mode`, printing `ready` before and `ack` after
 * one write) under strace and answers the trace's events.
 */
export async function trace(
  child: string,
  mode: string,
): Promise<{ events: Event[]; dataFile: string; out: string }> {
  const dir = await tempDir()
  const log = join(dir, 'strace.log')
  const traced = spawn(
    'strace',
    [
      '-f',
      '-y',
      '-s',
      '16',
      '-o',
      log,
      '-e',
      'trace=openat,fsync,fdatasync,msync,sync_file_range,write,pwrite64,pwritev,pwritev2,writev',
      process.execPath,
      '--import',
      'tsx',
      child,
      join(dir, 'store'),
      mode,
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let out = ''
  traced.stdout!.on('data', (chunk: Buffer) => {
    out += chunk.toString()
  })
  traced.stderr!.on('data', (chunk: Buffer) => {
    out += chunk.toString()
  })
  await closed(traced)
  return { events: parse(await readFile(log, 'utf8')), dataFile: join(dir, 'store', 'data.mdb'), out }
}

/** What happened to the data file between `ready` and `ack` on stdout. */
export function commitWindow(events: Event[], dataFile: string) {
  const stdout = (e: Event, text: string) => e.kind === 'write' && e.fd === '1' && e.text.includes(text)
  const ready = events.findIndex((e) => stdout(e, 'ready'))
  const ack = events.findIndex((e) => stdout(e, 'ack'))
  expect(ready, 'the child printed ready').toBeGreaterThanOrEqual(0)
  expect(ack, 'the child printed ack').toBeGreaterThan(ready)
  // Descriptors of the data file opened with O_DSYNC/O_SYNC: a write through one is on disk when it returns.
  const synchronous = new Set<string>()
  for (const e of events.slice(0, ack))
    if (e.kind === 'open' && e.path === dataFile) {
      if (e.synchronous) synchronous.add(e.fd)
      else synchronous.delete(e.fd)
    }
  const window = events.slice(ready + 1, ack)
  const syncs = window.flatMap((e, i) =>
    (e.kind === 'sync' && (e.path === dataFile || e.path === 'msync')) ||
    (e.kind === 'write' && e.path === dataFile && synchronous.has(e.fd))
      ? [i]
      : [],
  )
  const unsynced = window.flatMap((e, i) =>
    e.kind === 'write' && e.path === dataFile && !synchronous.has(e.fd) && !syncs.some((s) => s > i)
      ? [i]
      : [],
  )
  const writes = window.filter((e) => e.kind === 'write' && e.path === dataFile).length
  return { syncs: syncs.length, unsynced: unsynced.length, writes }
}
