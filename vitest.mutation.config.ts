import { defineConfig, mergeConfig } from 'vitest/config'
import base from './vitest.config.js'

/**
 * The tests mutation testing (`npm run test:mutation`) runs against each mutant: the fast suites
 * that cover the mutated modules (access, encryption, search limits, HTTP bodies), without the
 * crash, load and PostgreSQL suites, which would only slow every mutant down.
 */
export default mergeConfig(
  base,
  defineConfig({
    test: {
      include: [
        'test/core/**/*.test.ts',
        'test/encryption/**/*.test.ts',
        'test/http/**/*.test.ts',
        'test/hostile/**/*.test.ts',
        'test/limits/**/*.test.ts',
      ],
    },
  }),
)
