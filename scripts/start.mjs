// `npm start`: runs the built server (dist/bin/tokenvault.js) with the arguments given. It builds
// first only when dist/ is missing or older than a source file (`npm ci` already built it through
// `prepare`), so a start costs the server's own start-up, not a compile.
import { spawnSync } from 'node:child_process'
import { readdirSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const here = join(dirname(fileURLToPath(import.meta.url)), '..')

/** The newest modification time (ms) of the TypeScript sources under `dir`; 0 when none. */
function newestSource(dir) {
  let newest = 0
  let entries
  try {
    entries = readdirSync(dir, { withFileTypes: true })
  } catch {
    return 0
  }
  for (const entry of entries) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path))
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs)
  }
  return newest
}

/** Why `root` needs a build before starting (dist missing, or a source newer than it); null when it doesn't. */
export function buildReason(root = here) {
  let built
  try {
    built = statSync(join(root, 'dist/bin/tokenvault.js')).mtimeMs
  } catch {
    return 'dist/ is missing'
  }
  const newest = Math.max(...['src', 'adapters', 'bin', 'testing'].map((d) => newestSource(join(root, d))))
  return newest > built ? 'a source file is newer than dist/' : null
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const reason = buildReason()
  if (reason) {
    process.stderr.write(`tokenvault: building first (${reason})\n`)
    const build = spawnSync('npm', ['run', '--silent', 'build'], { cwd: here, stdio: 'inherit' })
    if (build.status !== 0) process.exit(build.status ?? 1)
  }
  await import(pathToFileURL(join(here, 'dist/bin/tokenvault.js')).href)
}
