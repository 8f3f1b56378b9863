import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'

const script = fileURLToPath(new URL('../../scripts/relayout.mjs', import.meta.url))

describe('scripts/relayout.mjs --rewrite-only, on a tree merged from a branch written for the old layout', () => {
  let root: string | undefined
  afterEach(() => {
    if (root) rmSync(root, { recursive: true, force: true })
  })
  const tree = (files: Record<string, string>) => {
    root = mkdtempSync(join(tmpdir(), 'relayout-'))
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(root, path)), { recursive: true })
      writeFileSync(join(root, path), text)
    }
    return root
  }
  const run = (mode: string, at: string) =>
    spawnSync(process.execPath, [script, mode, at], { encoding: 'utf8' })
  const read = (path: string) => readFileSync(join(root!, path), 'utf8')

  it('points old paths at the new places, across folders through their index.ts, and then has nothing left to do', () => {
    const at = tree({
      'src/kernel/errors.ts': 'export class ServiceError extends Error {}\nexport type Code = string\n',
      'src/tokens/dedup.ts': 'export const dedup = 1\n',
      // A line merged into a moved file, still written for its old place (src/tokens/create.ts).
      'src/tokens/create.ts':
        "import { ServiceError } from './errors.js'\nimport { dedup } from './dedup.js'\nexport const create = [ServiceError, dedup]\n",
      // A test added on the branch, importing old paths (static, type-only, dynamic and mocked).
      'test/new.test.ts': [
        "import { ServiceError } from '../src/errors.js'",
        "import type { Code } from '../src/errors.js'",
        "const later = () => import('../src/dedup.js')",
        "vi.mock('../src/token-create.js')",
        "const unmoved = '../src/nothing-here.js'",
      ].join('\n'),
      'README.md': 'Errors live in `src/errors.ts`; see also src/dedup.ts.\n',
    })
    const first = run('--rewrite-only', at)
    expect(first.status).toBe(0)
    expect(read('src/tokens/create.ts')).toBe(
      "import { ServiceError } from '../kernel/index.js'\nimport { dedup } from './dedup.js'\nexport const create = [ServiceError, dedup]\n",
    )
    expect(read('src/kernel/index.ts')).toContain("export { ServiceError } from './errors.js'")
    expect(read('src/kernel/index.ts')).toContain("export type { Code } from './errors.js'")
    expect(read('test/new.test.ts')).toBe(
      [
        "import { ServiceError } from '../src/kernel/errors.js'",
        "import type { Code } from '../src/kernel/errors.js'",
        "const later = () => import('../src/tokens/dedup.js')",
        "vi.mock('../src/tokens/create.js')",
        "const unmoved = '../src/nothing-here.js'",
      ].join('\n'),
    )
    expect(read('README.md')).toBe('Errors live in `src/kernel/errors.ts`; see also src/tokens/dedup.ts.\n')
    expect(run('--check', at).status).toBe(0)
    expect(run('--rewrite-only', at).stdout).toContain('0 file(s) rewritten')
  })

  it('--check fails while a file still points at an old place', () => {
    const at = tree({
      'src/kernel/errors.ts': 'export class ServiceError extends Error {}\n',
      'bin/x.ts': "import { ServiceError } from '../src/errors.js'\n",
    })
    const result = run('--check', at)
    expect(result.status).toBe(1)
    expect(result.stderr).toContain('bin/x.ts')
  })
})
