import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
// @ts-expect-error: a plain JavaScript script, checked by running it
import { ALLOWED } from '../../scripts/check-function-length.mjs'

const script = fileURLToPath(new URL('../../scripts/check-function-length.mjs', import.meta.url))

/** A source text whose function `name` spans exactly `lines` lines, its doc comment not counted. */
function sourceWith(
  name: string,
  lines: number,
  shape: 'function' | 'arrow' | 'method' = 'function',
): string {
  const body = Array.from({ length: lines - 2 }, (_, i) => `  count += ${i}`)
  const open =
    shape === 'function'
      ? `export function ${name}(): void {`
      : shape === 'arrow'
        ? `export const ${name} = (): void => {`
        : `export const table = { ${name}(): void {`
  const close = shape === 'method' ? '} }' : '}'
  return ['let count = 0', '/**', ' * Doc lines do not count.', ' */', open, ...body, close, ''].join('\n')
}

const roots: string[] = []
/** A tree holding `files` (repository-relative path → text). */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'fnlen-'))
  roots.push(root)
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true })
    writeFileSync(join(root, path), text)
  }
  return root
}
const run = (root: string) => spawnSync(process.execPath, [script, root], { encoding: 'utf8' })

afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true })
})

// Each test starts node on a temp tree: a busy machine can take many seconds to do so.
describe('scripts/check-function-length.mjs', { timeout: 120_000 }, () => {
  it('passes a function of 100 lines', () => {
    const result = run(tree({ 'src/a/long.ts': sourceWith('hundred', 100) }))
    expect(result.stderr).toBe('')
    expect(result.status).toBe(0)
  })

  it('fails a function of 101 lines in src/, naming its file, line, name and length', () => {
    const result = run(tree({ 'src/a/long.ts': sourceWith('tooLong', 101) }))
    expect(result.status).toBe(1)
    expect(result.stderr).toContain('101 lines (over 100) src/a/long.ts:5 tooLong')
    expect(result.stderr).toContain('to fix, split each by responsibility')
  })

  it('fails an arrow function of 101 lines in adapters/ under its variable name, and a method under its own', () => {
    const arrow = run(tree({ 'adapters/x/store.ts': sourceWith('openIt', 101, 'arrow') }))
    expect(arrow.status).toBe(1)
    expect(arrow.stderr).toContain('adapters/x/store.ts:5 openIt')
    const method = run(tree({ 'adapters/x/store.ts': sourceWith('write', 101, 'method') }))
    expect(method.status).toBe(1)
    expect(method.stderr).toContain('adapters/x/store.ts:5 write')
  })

  it('passes a function of 101 lines on the allow-list, and one in a test file or outside src/ and adapters/', () => {
    const result = run(
      tree({
        'src/kernel/token-record.ts': sourceWith('build', 101),
        'src/a/long.test.ts': sourceWith('inATest', 150),
        'bench/long.ts': sourceWith('inBench', 150),
      }),
    )
    expect(result.stderr).toBe('')
    expect(result.status).toBe(0)
  })

  it('allows only declarative tables past the limit: SQL text and per-field tables', () => {
    const whys = [...(ALLOWED as Map<string, string>).values()]
    expect(whys.filter((why) => !/^(?:SQL text|a per-field table): /.test(why))).toEqual([])
  })

  it('lists every function over the limit, not only the first', () => {
    const result = run(
      tree({ 'src/a.ts': sourceWith('first', 120), 'adapters/b.ts': sourceWith('second', 101, 'arrow') }),
    )
    expect(result.status).toBe(1)
    expect(result.stderr).toContain('src/a.ts:5 first')
    expect(result.stderr).toContain('adapters/b.ts:5 second')
  })
})
