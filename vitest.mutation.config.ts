import { defineConfig, mergeConfig } from 'vitest/config'
import base from './vitest.config.js'

/**
 * The tests mutation testing (`npm run test:mutation`) runs against each mutant: the fast suites
 * that cover the mutated modules (access, encryption, search limits, HTTP bodies), without the
 * crash, load and PostgreSQL suites, which would only slow every mutant down.
 * `TOKENVAULT_MUTATION_TESTS` (comma-separated globs) narrows them for a run over one module.
 */
const only = process.env['TOKENVAULT_MUTATION_TESTS']

// `mergeConfig` concatenates arrays, so the base's `include` (every test) is replaced, not merged.
const config = mergeConfig(
  base,
  defineConfig({
    test: {},
  }),
)
// One project of its own (not the base's fast and slow ones), and no throwaway PostgreSQL: the
// suites mutants run need none.
delete config.test!.projects
config.test!.globalSetup = []
config.test!.include = only
  ? only.split(',').map((glob) => glob.trim())
  : [
      'test/core/**/*.test.ts',
      'test/encryption/**/*.test.ts',
      'test/http/**/*.test.ts',
      'test/hostile/isolation.test.ts',
      'test/hostile/reveal-by-write.test.ts',
      'test/limits/**/*.test.ts',
      'test/mutation/**/*.test.ts',
    ]
export default config
