import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
// @ts-expect-error: a plain JavaScript script, checked by running it
import { findProblems, importSpecifiers } from '../../scripts/check-imports.mjs'

const script = fileURLToPath(new URL('../../scripts/check-imports.mjs', import.meta.url))
const graph = (edges: Record<string, string[]>) => new Map(Object.entries(edges))

describe('scripts/check-imports.mjs', () => {
  it('finds a circle, however long, and names its files', () => {
    const problems: string[] = findProblems(
      graph({
        'src/a.ts': ['src/b.ts'],
        'src/b.ts': ['src/c.ts'],
        'src/c.ts': ['src/a.ts'],
        'src/d.ts': ['src/a.ts'],
      }),
    )
    expect(problems).toEqual(['import circle: src/a.ts, src/b.ts, src/c.ts'])
  })

  it('finds a file importing itself', () => {
    expect(findProblems(graph({ 'adapters/x/index.ts': ['adapters/x/index.ts'] }))).toEqual([
      'import circle: adapters/x/index.ts',
    ])
  })

  it('refuses an import from src/ into adapters/, bin/, testing/ or entry/, not the other way', () => {
    const problems: string[] = findProblems(
      graph({
        'src/a.ts': ['adapters/sandbox/index.ts', 'bin/serve.ts', 'testing/index.ts', 'entry/index.ts'],
        'adapters/sandbox/index.ts': [],
        'bin/serve.ts': [],
        'testing/index.ts': [],
        'entry/index.ts': [],
        'src/b.ts': [],
        'adapters/x/index.ts': ['src/b.ts', 'entry/index.ts'],
        'bin/x.ts': ['src/b.ts', 'adapters/x/index.ts'],
      }),
    )
    expect(problems).toEqual([
      'core imports outside src/: src/a.ts → adapters/sandbox/index.ts',
      'core imports outside src/: src/a.ts → bin/serve.ts',
      'core imports outside src/: src/a.ts → testing/index.ts',
      'core imports outside src/: src/a.ts → entry/index.ts',
    ])
  })

  it("refuses an import past another folder's index.ts once it has one; its own folder may", () => {
    const problems: string[] = findProblems(
      graph({
        'src/tokens/index.ts': ['src/tokens/create.ts'],
        'src/tokens/create.ts': ['src/kernel/index.ts', 'src/kernel/errors.ts', 'src/store/contract.ts'],
        'src/kernel/index.ts': ['src/kernel/errors.ts'],
        'src/kernel/errors.ts': [],
        'src/store/contract.ts': [],
      }),
    )
    expect(problems).toEqual(["past a folder's index.ts: src/tokens/create.ts → src/kernel/errors.ts"])
  })

  it('reads static, re-exported, type-only and dynamic imports, not those in comments or packages', () => {
    const text = [
      "import { a } from './a.js'",
      "import type { B } from '../b.js'",
      "export { c } from './c.js'",
      "export * from './d.js'",
      "import './e.js'",
      "const f = await import('./f.js')",
      "import { g } from 'valibot'",
      "// import { h } from './h.js'",
      "/* import('./i.js') */",
    ].join('\n')
    expect(importSpecifiers(text)).toEqual(['./a.js', '../b.js', './c.js', './d.js', './e.js', './f.js'])
  })

  describe('run on a tree', () => {
    let root: string | undefined
    afterEach(() => {
      if (root) rmSync(root, { recursive: true, force: true })
    })
    const run = (files: Record<string, string>) => {
      root = mkdtempSync(join(tmpdir(), 'check-imports-'))
      for (const [path, text] of Object.entries(files)) {
        mkdirSync(dirname(join(root, path)), { recursive: true })
        writeFileSync(join(root, path), text)
      }
      return spawnSync(process.execPath, [script, root], { encoding: 'utf8' })
    }

    it('fails (exit code 1) on a circle through a dynamic import', () => {
      const result = run({
        'src/a.ts': "import { b } from './b.js'\nexport const a = () => b",
        'src/b.ts': "export const b = async () => (await import('./a.js')).a",
      })
      expect(result.status).toBe(1)
      expect(result.stderr).toContain('import circle: src/a.ts, src/b.ts')
    })

    it('passes (exit code 0) on a tree whose arrows run one way', () => {
      const result = run({
        'src/a.ts': "import { b } from './b.js'\nexport const a = () => b",
        'src/b.ts': 'export const b = 1',
        'adapters/x/index.ts': "import { a } from '../../src/a.js'\nexport const x = a",
      })
      expect(result.stderr).toBe('')
      expect(result.status).toBe(0)
    })
  })
})
