import { readdirSync, readFileSync } from 'node:fs'
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
 * run for seconds each. `npm test` runs the fast projects (`fast`, then `fast-isolated`), `npm run
 * test:slow` the `slow` one, `npm run test:all` (and `.ci/run`) all three, the slow files last.
 */
const slow = tests.map((glob) => glob.replace(/\*\.test\.ts$/, '*.slow.test.ts'))

/**
 * What makes a fast file need modules of its own: it replaces a module (`vi.mock`, `vi.doMock`,
 * `vi.hoisted` beside them), a module's export (`vi.spyOn`), a global or an environment variable,
 * or the timers; or it asserts what the process keeps in a module, shared by every vault of the
 * process, which a file before it in the worker would have moved: the parsed templates' cache, or
 * each tenant's last ordered id (`newOrderedId` goes on from it). Any other fast file shares its
 * worker's modules with the files before it.
 */
const OWN_MODULES =
  /\bvi\.(mock|doMock|hoisted|spyOn|stubGlobal|stubEnv|useFakeTimers)\(|\b(isTemplateCached|templatesCached|newOrderedId)\(/

/**
 * The fast files that get fresh modules (`isolate`), found by their text (`OWN_MODULES`): the
 * `fast-isolated` project. Read when the config loads, so a new file that mocks is one of them.
 */
const isolated = ['test', 'examples', 'adapters', 'src']
  .flatMap((dir) => readdirSync(dir, { recursive: true, encoding: 'utf8' }).map((f) => `${dir}/${f}`))
  .filter(
    (file) => file.endsWith('.test.ts') && !file.endsWith('.slow.test.ts') && !file.includes('node_modules'),
  )
  .filter((file) => OWN_MODULES.test(readFileSync(file, 'utf8')))
  .sort()

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
        // processes; no fast test touches process-wide state (RSS, signals, cwd, umask). A worker's
        // files share its modules (`isolate: false`): evaluating the service's module graph again
        // for each file cost 211 s of import time summed over the files (43 s shared), and the
        // run took 507 s against 352 s shared on this 2-core machine. The files that replace a
        // module, a global or the timers (`OWN_MODULES`) run after, each with fresh modules
        // (`fast-isolated`).
        test: {
          name: 'fast',
          include: tests,
          exclude: [...configDefaults.exclude, ...slow, ...isolated],
          pool: 'threads',
          maxWorkers: availableParallelism(),
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: 'fast-isolated',
          include: isolated,
          pool: 'threads',
          maxWorkers: availableParallelism(),
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        // One file at a time, each in its own process, after the fast ones: load, crash and fault
        // tests measure latency, RSS and survival and must not compete with each other for the
        // cores.
        test: { name: 'slow', include: slow, pool: 'forks', maxWorkers: 1, sequence: { groupOrder: 2 } },
      },
    ],
  },
})
