import { execFile } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { promisify } from 'node:util'
import { runInNewContext } from 'node:vm'
import { describe, expect, it } from 'vitest'
import { preludeSource } from '../../adapters/sandbox/prelude-source.js'

const run = promisify(execFile)
const sandboxDir = new URL('../../adapters/sandbox/', import.meta.url)

describe('the prelude is real source, bundled', () => {
  it('no program text is kept in a string in adapters/sandbox', () => {
    const files = readdirSync(sandboxDir, { recursive: true, encoding: 'utf8' }).filter((f) =>
      /\.(ts|js)$/.test(f),
    )
    expect(files).toContain('prelude/index.js')
    const withRaw = files.filter((f) => readFileSync(new URL(f, sandboxDir), 'utf8').includes('String.raw`'))
    expect(withRaw).toEqual([])
  })

  it('bundles the sources into one script answering the exports, with no name left global', async () => {
    const source = await preludeSource()
    expect(source.startsWith('(function () {')).toBe(true)
    expect(source).toContain('Digest method not supported')
    const context: Record<string, unknown> = { __host: {} }
    const exported = runInNewContext(source, context) as Record<string, unknown>
    expect(typeof exported.require).toBe('function')
    expect(Object.keys(context).filter((k) => k.startsWith('__'))).toEqual([])
  })

  it('a runner loaded from TypeScript sources starts its worker from a directory without node_modules', async () => {
    const index = new URL('../../adapters/sandbox/index.ts', import.meta.url).href
    const script = `
      const { sandboxRunner } = await import(${JSON.stringify(index)})
      const runner = sandboxRunner({ poolSize: 1 })
      const outcome = await runner.run('module.exports = async (req) => ({ raw: req.args.n + 1 })',
        { args: { n: 41 }, configuration: {} }, { timeoutMs: 120_000 })
      await runner.close()
      console.log(JSON.stringify(outcome))`
    const { stdout } = await run(
      process.execPath,
      ['--import', import.meta.resolve('tsx'), '--input-type=module', '-e', script],
      { cwd: tmpdir(), timeout: 30_000 },
    )
    expect(JSON.parse(stdout.trim())).toEqual({ ok: true, value: { raw: 42 }, logs: [] })
  }, 40_000)
})
