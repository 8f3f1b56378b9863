import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'

describe('README', () => {
  it('stays a ten-minute read: at most 300 lines', () => {
    expect(readFileSync('README.md', 'utf8').split('\n').length).toBeLessThanOrEqual(300)
  })

  it('shows the embedding example exactly as examples/embed.ts, and it runs as written', () => {
    const example = readFileSync('examples/embed.ts', 'utf8').trim()
    expect(readFileSync('README.md', 'utf8')).toContain(example)
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'examples/embed.ts'], {
      encoding: 'utf8',
      timeout: 30_000,
    })
    expect(run.stderr).toBe('')
    expect(run.stdout.trim()).toBe("true { number: '4242424242424242' }")
  })

  it('shows the test vault example exactly as examples/testing.test.ts (which runs with the tests)', () => {
    const example = readFileSync('examples/testing.test.ts', 'utf8').trim()
    expect(readFileSync('README.md', 'utf8')).toContain(example)
  })
})
