#!/usr/bin/env node
// Fails (exit 1) when the repository tracks a file it should not: one that .gitignore ignores (git
// keeps tracking a file that was committed before it was ignored), or one that looks like key
// material — a master key file (32 bytes in base64, or 32 raw bytes), a PEM private key, a
// `*.key` / `*.pem` / `*.p12` / `.env` file. Run by `npm run lint` (and so by `npm test` and CI).
// Test fixtures that need a key build it at run time; nothing secret is ever committed.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

const SECRET_NAME = /(^|\/)(\.env(\..+)?|[^/]*\.(key|pem|p12|pfx|jks))$/i
const PRIVATE_KEY = /-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----/
const BASE64_32_BYTES = /^[A-Za-z0-9+/]{43}=\s*$/
// Keys published on purpose, each with why: a key anyone may read, which protects nothing. Only
// the PEM check is waived for these paths, and only while the file's own text says it is public.
const PUBLISHED = new Map([
  [
    'src/webhooks/test-key.ts',
    'the test signing key of webhook deliveries, used by the test kit and test mode only',
  ],
])

/** The tracked files of the repository at `root` that .gitignore says to ignore. */
export function trackedIgnored(root) {
  const out = execFileSync('git', ['ls-files', '-ci', '--exclude-standard', '-z'], { cwd: root })
  return out.toString('utf8').split('\0').filter(Boolean)
}

/** Why the content of tracked file `path` looks like key material, or null. */
export function keyMaterial(path, content) {
  if (SECRET_NAME.test(path)) return 'its name is that of a key or secrets file'
  if (content.length === 32 && !path.endsWith('.txt')) return 'it holds exactly 32 bytes (a raw key)'
  if (content.length > 1_000_000) return null
  const text = content.toString('utf8')
  if (BASE64_32_BYTES.test(text)) return 'it holds a 32-byte key in base64'
  if (PRIVATE_KEY.test(text) && !(PUBLISHED.has(path) && /\bIt is public\b/.test(text)))
    return 'it holds a PEM private key'
  return null
}

/** Every problem of the repository at `root`, one line each. */
export function findSecretProblems(root) {
  const problems = trackedIgnored(root).map((path) => `${path}: tracked although .gitignore ignores it`)
  const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: root }).toString('utf8').split('\0')
  for (const path of tracked.filter(Boolean)) {
    let content
    try {
      content = readFileSync(join(root, path))
    } catch {
      continue // deleted in the work tree, not yet committed
    }
    const why = keyMaterial(path, content)
    if (why) problems.push(`${path}: looks like key material (${why})`)
  }
  return problems
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const problems = findSecretProblems(process.argv[2] ?? process.cwd())
  for (const problem of problems) process.stderr.write(`check-secrets: ${problem}\n`)
  if (problems.length > 0) {
    process.stderr.write(
      'check-secrets: remove these from the index (git rm --cached PATH) and rotate any key they held\n',
    )
    process.exit(1)
  }
}
