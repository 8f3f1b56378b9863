/**
 * The command line's hygiene: `--help` wrapped to the terminal's width, "did you mean" for an
 * unknown option, and one meaning per environment variable (the CLI reads no TOKENVAULT_SEED, which
 * once also meant the suites' fuzz seed; its fixture file is TOKENVAULT_SEED_FILE).
 */
import { describe, expect, it } from 'vitest'
import { tuneHeapFor } from '../../bin/serve.js'
import { start } from './spawn.js'

it('--help fits 80 columns (COLUMNS when stdout is not a terminal), and 60 but for unbreakable words', async () => {
  for (const columns of [80, 60]) {
    const help = start(['--help'], undefined, { COLUMNS: String(columns) })
    expect((await help.exited)[0]).toBe(0)
    const lines = help.lines
    expect(lines.length).toBeGreaterThan(40)
    for (const line of lines)
      if (line.trim().includes(' ') || columns === 80) expect(line.length, line).toBeLessThanOrEqual(columns)
  }
}, 60_000)

it('an unknown option close to a known one: exit 2 and "did you mean"', async () => {
  const typo = start(['serve', '--prot', '3000'])
  expect((await typo.exited)[0]).toBe(2)
  expect(typo.stderr()).toContain('unknown option --prot; did you mean --port?')
  const far = start(['serve', '--zzzzzz'])
  expect((await far.exited)[0]).toBe(2)
  expect(far.stderr()).toContain('unknown option --zzzzzz')
  expect(far.stderr()).not.toContain('did you mean')
}, 60_000)

it('TOKENVAULT_SEED (a fuzz seed being replayed) does not reach the CLI; TOKENVAULT_SEED_FILE is its fixture', async () => {
  const replay = start(['serve', '--port', '0', '--store', 'memory', '--log', 'none'], undefined, {
    TOKENVAULT_SEED: '12345',
  })
  expect(await replay.line(1)).toMatch(/^listening on /)
  replay.child.kill('SIGTERM')
  expect((await replay.exited)[0]).toBe(0)
  const fixture = start(['serve', '--port', '0', '--store', 'memory'], undefined, {
    TOKENVAULT_SEED_FILE: '/no/such/fixture.json',
  })
  expect((await fixture.exited)[0]).toBe(2)
  expect(fixture.stderr()).toContain(
    '--seed (TOKENVAULT_SEED_FILE): /no/such/fixture.json is not a readable JSON file',
  )
}, 60_000)

describe('serve: the heap of a server on a file or PostgreSQL store', () => {
  it('lets V8 grow it 300 % past what a full collection kept, and leaves the memory store to V8', () => {
    const set: string[] = []
    tuneHeapFor('file:./.tokenvault', (flags) => set.push(flags))
    tuneHeapFor('postgres://u:p@localhost/db', (flags) => set.push(flags))
    expect(set).toEqual(['--heap-growing-percent=300', '--heap-growing-percent=300'])
    tuneHeapFor('memory', (flags) => set.push(flags))
    expect(set).toHaveLength(2)
  })
})
