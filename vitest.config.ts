import { readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { fileURLToPath } from 'node:url'
import { configDefaults, defineConfig, type Plugin } from 'vitest/config'

type Target = string | { [condition: string]: Target }
type Exports = Record<string, Target>
const exportsMap = (
  JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8')) as { exports: Exports }
).exports

/**
 * Tests that import the package by name (`tokenvault/testing`, …) get its source, not `dist/`: the
 * entry point is read from package.json's `exports`, and `./dist/<path>.js` maps to `./<path>.ts`,
 * so a test never runs a stale build.
 */
/** The file an `import` resolves an export entry to (through nested `import` / `default` conditions). */
function importTarget(entry: Target | undefined): string | undefined {
  if (entry === undefined || typeof entry === 'string') return entry
  return importTarget(entry['import'] ?? entry['default'])
}

function packageFromSource(): Plugin {
  return {
    name: 'tokenvault-from-source',
    enforce: 'pre',
    resolveId(id) {
      if (id !== 'tokenvault' && !id.startsWith('tokenvault/')) return null
      const target = importTarget(exportsMap[`.${id.slice('tokenvault'.length)}`])
      if (!target?.startsWith('./dist/')) return null
      return fileURLToPath(
        new URL(`./${target.slice('./dist/'.length).replace(/\.js$/, '.ts')}`, import.meta.url),
      )
    },
  }
}

/** Where tests live: every `*.test.ts` under these folders. */
const tests = ['test/**/*.test.ts', 'examples/**/*.test.ts', 'adapters/**/*.test.ts', 'src/**/*.test.ts']

/**
 * The slow suite is every file named `*.slow.test.ts`, beside the fast tests of its topic: crash,
 * load, fault, heap, browser and packaging tests, which spawn processes, kill them, fill disks or
 * run for seconds each. `npm test` runs the `fast` project, `npm run test:slow` the `slow` one,
 * `npm run test:all` (and `.ci/run`) both, the slow files after the fast ones.
 */
const slow = tests.map((glob) => glob.replace(/\*\.test\.ts$/, '*.slow.test.ts'))

export default defineConfig({
  plugins: [packageFromSource()],
  test: {
    globalSetup: ['test/global-setup.ts'],
    // A test that starts a sandbox, a server or a child process may wait many seconds for it on a
    // machine whose cores are held by other work; a timeout only stops a hang.
    testTimeout: 60_000,
    // Hooks start servers and drop PostgreSQL schemas made by a whole file (hundreds of tables):
    // on a machine whose cores are held by other work that can take a minute.
    hookTimeout: 120_000,
    // CLI servers the tests start answer every request on their main thread: a heavy lane's thread
    // would boot through tsx in each. test/cli/heavy-lane.test.ts turns it on.
    env: { TOKENVAULT_HEAVY_LANE: 'off' },
    projects: [
      {
        extends: true,
        // One worker per core (vitest's default leaves one core to its main process, which is
        // idle once the files are transformed): many fast files wait on sockets, child processes
        // and PostgreSQL, so a second file overlaps them. Worker threads start faster than forked
        // processes; no fast test touches process-wide state (RSS, signals, cwd, umask), and each
        // file still gets fresh modules (`isolate`, which `vi.mock` in test/core/egress.test.ts
        // needs).
        test: {
          name: 'fast',
          include: tests,
          exclude: [...configDefaults.exclude, ...slow],
          pool: 'threads',
          maxWorkers: availableParallelism(),
        },
      },
      {
        extends: true,
        // One file at a time, each in its own process, after the fast ones: load, crash and fault
        // tests measure latency, RSS and survival and must not compete with each other for the
        // cores.
        test: { name: 'slow', include: slow, pool: 'forks', maxWorkers: 1, sequence: { groupOrder: 1 } },
      },
    ],
  },
})
