/**
 * Gives `npm test`, `npm run test:slow` and `npm run test:all` the environments their suites need,
 * so none is skipped silently: without `TOKENVAULT_PG_URL`, a throwaway PostgreSQL is started with
 * `scripts/pg-test-server.sh` (when the server binaries are installed) and stopped after the run.
 * Every vitest project (fast, slow) runs this setup; the first call starts the server and sets
 * `TOKENVAULT_PG_URL`, so the later ones find it and a run has one server. When it can't start, a
 * loud line says so; the PostgreSQL suites then fail in CI (`CI` set) and are skipped with a note
 * elsewhere.
 */
import { execFileSync } from 'node:child_process'

export default function setup(): (() => void) | undefined {
  if (process.env['TOKENVAULT_PG_URL']) return undefined
  let exports: string
  try {
    exports = execFileSync('bash', ['scripts/pg-test-server.sh', 'start'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 60_000,
    })
  } catch (error) {
    const reason = (error as { stderr?: string }).stderr?.trim().split('\n').at(-1) ?? String(error)
    console.warn(`test setup: could not start PostgreSQL (${reason}): the PostgreSQL suites will not run`)
    return undefined
  }
  for (const [, name, value] of exports.matchAll(/^export (\w+)=(.*)$/gm)) {
    if (name && value !== undefined) process.env[name] = value.replace(/^'(.*)'$/, '$1')
  }
  const dir = process.env['TOKENVAULT_PG_DIR']
  return () => {
    if (dir)
      execFileSync('bash', ['scripts/pg-test-server.sh', 'stop', dir], { stdio: 'ignore', timeout: 60_000 })
  }
}
