/**
 * The fast suite's two projects (vitest.config.ts): the files of a `fast` worker share its modules,
 * so a file that replaces a module, an export, a global, an environment variable or the timers, or
 * asserts what a module keeps for the process (the parsed templates' cache, each tenant's last
 * ordered id), must be in
 * `fast-isolated`, which gives each file modules of its own, and in no other project. The
 * calls are spelled apart here so that this file is not one of them.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'
import config from '../../vitest.config.js'

const root = fileURLToPath(new URL('../..', import.meta.url))
const REPLACING = [
  ...['mock', 'doMock', 'spyOn', 'stubGlobal', 'stubEnv', 'useFakeTimers'].map((m) => `vi.${m}(`),
  // What the process keeps in a module, read by a test: the parsed templates' cache, the ids' counters.
  ...['isTemplateCached', 'templatesCached', 'newOrderedId'].map((f) => `${f}(`),
]

interface Project {
  test: { name: string; include?: string[]; exclude?: string[]; isolate?: boolean }
}
const projects = (config as { test: { projects: Project[] } }).test.projects
const project = (name: string) => projects.find((p) => p.test.name === name)!.test

/** Every fast test file (not `*.slow.test.ts`) under the test folders, relative to the root. */
const fastFiles = ['test', 'examples', 'adapters', 'src'].flatMap((dir) =>
  readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
    .map((f) => `${dir}/${f}`)
    .filter((f) => f.endsWith('.test.ts') && !f.endsWith('.slow.test.ts') && !f.includes('node_modules')),
)

it('every fast file that replaces a module, a global or the timers, or reads process state, runs with modules of its own', () => {
  const replacing = fastFiles.filter((f) => {
    const text = readFileSync(join(root, f), 'utf8')
    return REPLACING.some((call) => text.includes(call))
  })
  expect(replacing).toContain('test/core/egress.test.ts')
  expect(replacing).toContain('test/core/expressions.test.ts')
  expect(replacing).toContain('test/core/ordered-ids.test.ts')
  expect(replacing.length).toBeGreaterThan(10)
  const isolated = project('fast-isolated')
  expect(isolated.isolate).not.toBe(false)
  for (const file of replacing) {
    expect(isolated.include, file).toContain(file)
    expect(project('fast').exclude, file).toContain(file)
  }
})

it('the other fast files share their worker’s modules, in the fast project only', () => {
  const fast = project('fast')
  expect(fast.isolate).toBe(false)
  expect(fast.exclude).not.toContain('test/layout/imports.test.ts')
  expect(project('fast-isolated').include).not.toContain('test/layout/imports.test.ts')
  expect(project('fast-isolated').include).not.toContain('test/layout/test-projects.test.ts')
})
