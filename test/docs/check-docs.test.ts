import { spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
// @ts-expect-error: a plain JavaScript script, checked by running it
import { slug } from '../../scripts/check-docs.mjs'

const script = fileURLToPath(new URL('../../scripts/check-docs.mjs', import.meta.url))
const repo = fileURLToPath(new URL('../..', import.meta.url))

const roots: string[] = []
/** A tree holding `files` (repository-relative path → text). */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'docs-check-'))
  roots.push(root)
  for (const [path, text] of Object.entries(files)) write(root, path, text)
  return root
}
function write(root: string, path: string, text: string): void {
  mkdirSync(dirname(join(root, path)), { recursive: true })
  writeFileSync(join(root, path), text)
}
/** A copy of the repository's docs (README, docs/, bench/NOTES.md and what they link to). */
function copyOfRepo(): string {
  const root = mkdtempSync(join(tmpdir(), 'docs-copy-'))
  roots.push(root)
  const skip = new Set(['node_modules', '.git', 'dist', '.tokenvault', '.stryker-tmp', 'reports'])
  cpSync(repo, root, {
    recursive: true,
    filter: (source) => !skip.has(source.slice(repo.length).split('/')[0] ?? ''),
  })
  return root
}
const run = (root: string) => spawnSync(process.execPath, [script, root], { encoding: 'utf8' })
const fence = '```'

afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true })
})

describe('scripts/check-docs.mjs on the repository', () => {
  it('passes the docs as they are', () => {
    const result = run(repo)
    expect(result.stderr).toBe('')
    expect(result.status).toBe(0)
  })

  it('fails a copy where a page links to a file that does not exist', () => {
    const root = copyOfRepo()
    write(
      root,
      'docs/search.md',
      `${readFileSync(join(root, 'docs/search.md'), 'utf8')}\nSee [gone](./gone.md).\n`,
    )
    const result = run(root)
    expect(result.status).toBe(1)
    expect(result.stderr).toMatch(
      /docs\/search\.md:\d+: broken link: \.\/gone\.md \(no file docs\/gone\.md\)/,
    )
  })

  it('fails a copy where a page links to an anchor its target does not have', () => {
    const root = copyOfRepo()
    write(
      root,
      'README.md',
      `${readFileSync(join(root, 'README.md'), 'utf8')}\n[x](docs/limits.md#no-such-heading)\n`,
    )
    const result = run(root)
    expect(result.status).toBe(1)
    expect(result.stderr).toContain(
      'broken link: docs/limits.md#no-such-heading (no heading #no-such-heading',
    )
  })

  it('fails a copy holding a code block neither run nor marked', () => {
    const root = copyOfRepo()
    const page = readFileSync(join(root, 'docs/getting-started.md'), 'utf8')
    write(root, 'docs/getting-started.md', `${page}\n${fence}sh\nnpm run something\n${fence}\n`)
    const result = run(root)
    expect(result.status).toBe(1)
    expect(result.stderr).toMatch(/docs\/getting-started\.md:\d+: unmarked sh code block/)
  })
})

describe('scripts/check-docs.mjs rules', () => {
  it('accepts a relative link to a file, a folder, a heading of the same page or of another', () => {
    const root = tree({
      'README.md':
        '# Title\n\n## The `store` (file)\n\n[a](docs/a.md) [b](docs/a.md#part-two) [c](#the-store-file) [d](src/) [e](src/x.ts#L1)\n',
      'docs/a.md':
        '# A\n\n## Part two\n\n![img](./pic.png) [back](../README.md#title) [web](https://example.com/x#y)\n',
      'docs/pic.png': '',
      'src/x.ts': '',
    })
    const result = run(root)
    expect(result.stderr).toBe('')
    expect(result.status).toBe(0)
  })

  it('ignores links inside inline code and fenced blocks', () => {
    const root = tree({
      'README.md': `# T\n\n\`[a](missing.md)\`\n\n<!-- fragment: an illustration -->\n${fence}md\n[b](missing.md)\n${fence}\n`,
    })
    expect(run(root).status).toBe(0)
  })

  it('accepts a missing page docs/.pending lists, and checks it once it exists', () => {
    const pending = { 'docs/.pending': 'docs/proxy.md\n', 'README.md': '# T\n\n[p](docs/proxy.md#setup)\n' }
    expect(run(tree(pending)).status).toBe(0)
    const landed = run(tree({ ...pending, 'docs/proxy.md': '# Proxy\n' }))
    expect(landed.status).toBe(1)
    expect(landed.stderr).toContain('no heading #setup in docs/proxy.md')
    expect(run(tree({ 'README.md': '# T\n\n[p](docs/proxy.md)\n' })).status).toBe(1)
  })

  it('fails a heading duplicated in a page, at any level, naming both lines', () => {
    const result = run(tree({ 'docs/a.md': '# A\n\n## Limits\n\ntext\n\n### Limits\n' }))
    expect(result.status).toBe(1)
    expect(result.stderr).toContain('docs/a.md:7: heading "Limits" duplicates line 3')
    expect(
      run(tree({ 'docs/a.md': '# A\n\n## Limits\n\n## Other\n', 'docs/b.md': '## Limits\n' })).status,
    ).toBe(0)
  })

  it('accounts for a block marked fragment with a reason, never without one', () => {
    const marked = `# T\n\n<!-- fragment: needs a running server -->\n${fence}sh\ncurl x\n${fence}\n`
    expect(run(tree({ 'README.md': marked })).status).toBe(0)
    const bare = run(tree({ 'README.md': `# T\n\n<!-- fragment: -->\n${fence}sh\ncurl x\n${fence}\n` }))
    expect(bare.status).toBe(1)
    expect(bare.stderr).toContain('README.md:4: fragment marker without a reason')
    const apart = run(
      tree({ 'README.md': `# T\n\n<!-- fragment: why -->\n\n${fence}sh\ncurl x\n${fence}\n` }),
    )
    expect(apart.stderr).toContain('README.md:5: unmarked sh code block')
  })

  it('accepts a block marked as an example file only while it is that file', () => {
    const page = `# T\n\n<!-- example: examples/a.ts -->\n${fence}ts\nconsole.log(1)\n${fence}\n`
    expect(run(tree({ 'README.md': page, 'examples/a.ts': '\nconsole.log(1)\n' })).status).toBe(0)
    const drifted = run(tree({ 'README.md': page, 'examples/a.ts': 'console.log(2)\n' }))
    expect(drifted.status).toBe(1)
    expect(drifted.stderr).toContain('README.md:4: block differs from examples/a.ts')
  })

  it('takes an unmarked ts block that imports only tokenvault and node: modules (to run), fails one importing anything else', () => {
    const ok = `# T\n\n${fence}ts\nimport { createServer } from 'node:http'\nimport { createService } from 'tokenvault'\nimport { memoryStore } from 'tokenvault/adapters/memory'\n${fence}\n`
    expect(run(tree({ 'README.md': ok })).status).toBe(0)
    const other = run(tree({ 'README.md': `# T\n\n${fence}ts\nimport { it } from 'vitest'\n${fence}\n` }))
    expect(other.status).toBe(1)
    expect(other.stderr).toContain('README.md:3: ts block imports vitest')
  })

  it('parses an unmarked json block and fails one that is not JSON', () => {
    expect(run(tree({ 'README.md': `# T\n\n${fence}json\n{ "a": [1, 2] }\n${fence}\n` })).status).toBe(0)
    const bad = run(tree({ 'README.md': `# T\n\n${fence}json\n{ a: 1 }\n${fence}\n` }))
    expect(bad.status).toBe(1)
    expect(bad.stderr).toContain('README.md:3: json block does not parse')
  })

  it('fails an unclosed block', () => {
    const result = run(tree({ 'README.md': `# T\n\n<!-- fragment: x -->\n${fence}sh\ncurl x\n` }))
    expect(result.stderr).toContain('README.md:4: code block never closed')
  })

  it('makes anchors as GitHub does', () => {
    expect(slug("Today's Basis Theory SDKs")).toBe('todays-basis-theory-sdks')
    expect(slug('The `store` contract: memory, file & PostgreSQL')).toBe(
      'the-store-contract-memory-file--postgresql',
    )
    expect(slug('What does not hold, and why')).toBe('what-does-not-hold-and-why')
    expect(slug('[Limits](limits.md) per tenant')).toBe('limits-per-tenant')
  })
})
