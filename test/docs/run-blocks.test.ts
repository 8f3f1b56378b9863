import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
// @ts-expect-error: a plain JavaScript script, checked by running it
import { runnableBlocks } from '../../scripts/check-docs.mjs'

/**
 * Every ```ts block of README.md, docs/ and bench/NOTES.md that is not marked as a fragment or an
 * example file is a complete program importing only `tokenvault` and `node:` modules (scripts/check-docs.mjs checks
 * that): each runs here as written, in a process of its own, against the sources, and must exit 0
 * with nothing on stderr. tsx maps `tokenvault` and each of its subpaths to its source file through
 * the `paths` of a tsconfig written here from package.json's `exports` (`./dist/<path>.js` →
 * `./<path>.ts`, as vitest.config.ts does for the tests).
 */
const repo = fileURLToPath(new URL('../..', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'docs-blocks-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

type Target = string | { [condition: string]: Target }
/** The file an `import` resolves an export entry to (through nested `import` / `default` conditions). */
function importTarget(entry: Target | undefined): string | undefined {
  if (entry === undefined || typeof entry === 'string') return entry
  return importTarget(entry['import'] ?? entry['default'])
}
/** A tsconfig mapping every export of the package to its source, for tsx. */
function sourcesTsconfig(): string {
  const { exports } = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as {
    exports: Record<string, Target>
  }
  const paths: Record<string, string[]> = {}
  for (const [subpath, entry] of Object.entries(exports)) {
    const target = importTarget(entry)
    if (!target?.startsWith('./dist/')) continue
    const source = join(repo, target.slice('./dist/'.length).replace(/\.js$/, '.ts'))
    paths[`tokenvault${subpath.slice(1)}`] = [source]
  }
  const file = join(dir, 'tsconfig.json')
  writeFileSync(file, JSON.stringify({ compilerOptions: { baseUrl: repo, paths } }))
  return file
}
const tsconfig = sourcesTsconfig()

type Block = { page: string; line: number; code: string }
const blocks: Block[] = runnableBlocks(repo)

/** Runs `file` with tsx; answers its exit code and output. */
function runProgram(file: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file], {
      cwd: repo,
      env: { ...process.env, TSX_TSCONFIG_PATH: tsconfig },
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => {
      stdout += chunk
    })
    child.stderr.on('data', (chunk) => {
      stderr += chunk
    })
    child.on('close', (code) => done({ code, stdout, stderr }))
  })
}

describe('the docs’ TypeScript blocks', () => {
  it('include the embedding example of README', () => {
    expect(blocks.some((b) => b.page === 'README.md' && b.code.includes('createService'))).toBe(true)
  })

  it.each(blocks.map((b) => [`${b.page}:${b.line}`, b] as const))(
    '%s runs as written',
    async (_name, block) => {
      const file = join(dir, `${block.page.replace(/[^a-z0-9]+/gi, '-')}-${block.line}.mts`)
      writeFileSync(file, block.code)
      const run = await runProgram(file)
      expect(run.stderr).toBe('')
      expect(run.code).toBe(0)
    },
  )
})
