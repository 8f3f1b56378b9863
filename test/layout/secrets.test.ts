import { execFileSync, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'

const script = fileURLToPath(new URL('../../scripts/check-secrets.mjs', import.meta.url))
const made: string[] = []
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true })
})

/** A git repository holding `files` (path → content), all added with `git add -f`, and this .gitignore. */
function repo(files: Record<string, string | Buffer>, gitignore = '.tokenvault.key\n'): string {
  const dir = mkdtempSync(join(tmpdir(), 'tokenvault-secrets-'))
  made.push(dir)
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, stdio: 'pipe' })
  git('init', '-q')
  writeFileSync(join(dir, '.gitignore'), gitignore)
  for (const [path, content] of Object.entries(files)) writeFileSync(join(dir, path), content)
  git('add', '-f', '.')
  return dir
}

// Spelled apart so that this file itself holds no PEM header for the check to find.
const PRIVATE = ['PRIVATE', 'KEY'].join(' ')
const check = (dir: string) => spawnSync(process.execPath, [script, dir], { encoding: 'utf8' })

describe('scripts/check-secrets.mjs', () => {
  it('passes a repository with nothing secret tracked', () => {
    const result = check(repo({ 'a.ts': 'export const x = 1\n', 'README.md': '# hi\n' }))
    expect(result.stderr).toBe('')
    expect(result.status).toBe(0)
  })

  it('fails on a tracked file that .gitignore ignores, naming it', () => {
    const result = check(repo({ 'a.ts': 'x\n', 'notes.log': 'x\n' }, '*.log\n'))
    expect(result.status).toBe(1)
    expect(result.stderr).toContain('notes.log: tracked although .gitignore ignores it')
  })

  it('fails on a master key file (base64 of 32 bytes, or 32 raw bytes) whatever its name', () => {
    const base64 = check(repo({ 'settings.txt': `${randomBytes(32).toString('base64')}\n` }))
    expect(base64.status).toBe(1)
    expect(base64.stderr).toContain(
      'settings.txt: looks like key material (it holds a 32-byte key in base64)',
    )
    const raw = check(repo({ 'blob.bin': randomBytes(32) }))
    expect(raw.status).toBe(1)
    expect(raw.stderr).toContain('blob.bin: looks like key material (it holds exactly 32 bytes')
    const shorter = check(
      repo({ 'blob.bin': randomBytes(31), 'b64.txt': randomBytes(31).toString('base64') }),
    )
    expect(shorter.status).toBe(0)
  })

  it('fails on a PEM private key and on files named like keys or secrets', () => {
    const pem = check(
      repo({ 'cert.txt': `-----BEGIN RSA ${PRIVATE}-----\nMII\n-----END RSA ${PRIVATE}-----\n` }),
    )
    expect(pem.status).toBe(1)
    expect(pem.stderr).toContain('cert.txt: looks like key material (it holds a PEM private key)')
    const named = check(repo({ 'server.pem': 'x', '.env': 'A=1', 'x.key': 'y' }, ''))
    expect(named.status).toBe(1)
    for (const name of ['server.pem', '.env', 'x.key'])
      expect(named.stderr).toContain(`${name}: looks like key material`)
  })

  it('passes this repository (the master key file is not tracked)', () => {
    const result = check(fileURLToPath(new URL('../../', import.meta.url)))
    expect(result.stderr).toBe('')
    expect(result.status).toBe(0)
  })
})
