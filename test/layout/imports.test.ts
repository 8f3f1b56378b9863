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

  it('lets through a listed bypass only as listed: one more import fails; no circle is let through', () => {
    const edges = {
      'src/tokens/index.ts': ['src/tokens/create.ts'],
      'src/tokens/create.ts': [],
      'src/tokens/read.ts': [],
      'adapters/x/a.ts': ['src/tokens/create.ts', 'src/tokens/read.ts', 'adapters/x/b.ts'],
      'adapters/x/b.ts': ['adapters/x/a.ts'],
    }
    const allowed = new Set(['adapters/x/a.ts → src/tokens/create.ts'])
    expect(findProblems(graph(edges), graph(edges), new Map(), allowed)).toEqual([
      'import circle: adapters/x/a.ts, adapters/x/b.ts',
      "past a core folder's index.ts from outside src/: adapters/x/a.ts → src/tokens/read.ts",
    ])
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

    it('fails on a circle made of type-only imports', () => {
      const result = run({
        'src/a.ts': "import type { B } from './b.js'\nexport type A = { b?: B }",
        'src/b.ts': "import type { A } from './a.js'\nexport type B = { a?: A }",
      })
      expect(result.status).toBe(1)
      expect(result.stderr).toContain('import circle: src/a.ts, src/b.ts')
      expect(result.stderr).toContain('to fix "import circle": move what the lower file names')
    })

    it('fails on a file outside src/ that imports a core file past its folder’s index.ts', () => {
      const result = run({
        'src/tokens/index.ts': "export { create } from './create.js'",
        'src/tokens/create.ts': 'export const create = 1',
        'adapters/x/index.ts': "import { create } from '../../src/tokens/create.js'\nexport const x = create",
        'testing/y.ts': "import { create } from '../src/tokens/index.js'\nexport const y = create",
      })
      expect(result.status).toBe(1)
      expect(result.stderr).toContain(
        "past a core folder's index.ts from outside src/: adapters/x/index.ts → src/tokens/create.ts",
      )
      expect(result.stderr).not.toContain('testing/y.ts')
    })

    it('fails on an import of node:http, https, net or dns in src/, not in adapters/', () => {
      const result = run({
        'src/a.ts':
          "import { request } from 'node:http'\nimport { createHash } from 'node:crypto'\nexport { request, createHash }",
        'src/b.ts': "export const lookup = async () => (await import('dns')).lookup",
        'adapters/egress/index.ts': "import { request } from 'node:https'\nexport { request }",
      })
      expect(result.status).toBe(1)
      expect(result.stderr).toContain('network module in src/: src/a.ts → node:http')
      expect(result.stderr).toContain('network module in src/: src/b.ts → dns')
      expect(result.stderr).not.toContain('node:crypto')
      expect(result.stderr).not.toContain('adapters/egress')
    })

    it('fails on an import out of src/kernel/ into the rest of src/, types included', () => {
      const result = run({
        'src/kernel/index.ts': "export type { Ctx } from './context.js'",
        'src/kernel/context.ts':
          "import type { Store } from '../store/index.js'\nexport type Ctx = { store: Store }",
        'src/store/index.ts': 'export type Store = { write(): void }',
      })
      expect(result.status).toBe(1)
      expect(result.stderr).toContain('kernel imports upward: src/kernel/context.ts → src/store/index.ts')
    })

    it('fails on a module-level let or var, a WeakMap or a WeakSet in src/, not in adapters/ or in a function', () => {
      const result = run({
        'src/a.ts': "let cache = ''\nexport const a = (x: string) => (cache = x)",
        'src/b.ts': 'export var count = 0',
        'src/c.ts': 'const seen = new WeakSet<object>()\nexport const c = (o: object) => seen.has(o)',
        'src/d.ts': 'export const d = new WeakMap<object, string>()',
        'src/e.ts': [
          '/** Keeps no WeakMap: the state is a field. */',
          '// let x = 1',
          'export function e() {',
          '  let total = 0',
          '  for (let i = 0; i < 3; i++) total += i',
          '  return total',
          '}',
        ].join('\n'),
        'adapters/x/index.ts': 'let kept = 0\nexport const x = () => ++kept\nexport const y = new WeakMap()',
      })
      expect(result.status).toBe(1)
      const lines = result.stderr.split('\n').filter((line) => line.startsWith('module state'))
      expect(lines).toEqual([
        "module state in src/: src/a.ts line 1: let cache = ''",
        'module state in src/: src/b.ts line 1: export var count = 0',
        'module state in src/: src/c.ts line 1: const seen = new WeakSet<object>()',
        'module state in src/: src/d.ts line 1: export const d = new WeakMap<object, string>()',
      ])
      expect(result.stderr).toContain('to fix "module state in src/": keep the state in a field')
    })

    it('passes this repository', () => {
      const result = spawnSync(process.execPath, [script], { encoding: 'utf8' })
      expect(result.stderr).toBe('')
      expect(result.status).toBe(0)
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
