import type { FormulaRunner, RunOutcome } from '../../src/kernel/runner.js'

/**
 * A stand-in formula runner for adapter tests: it does not run code, it answers by markers in it.
 * `SYNTAX` fails the compile check; `INVALID` can't load (422); `THROW_<status>` throws with that
 * status; `TIMEOUT` times out (504); otherwise it answers `{ raw: { args, configuration }, tokenize }`
 * where `tokenize` is the `tokenize` arg, if any.
 */
export function fakeRunner(): FormulaRunner {
  return {
    check: async (code) => (code.includes('SYNTAX') ? 'SyntaxError: Unexpected token' : null),
    async run(code, request): Promise<RunOutcome> {
      if (code.includes('INVALID')) return { ok: false, kind: 'invalid', message: 'no exported function' }
      const thrown = /THROW_(\d{3})/.exec(code)
      if (thrown)
        return { ok: false, kind: 'thrown', message: 'the formula refused', status: Number(thrown[1]) }
      if (code.includes('TIMEOUT')) return { ok: false, kind: 'timeout', message: 'timed out' }
      const { tokenize, ...args } = request.args
      const value = { raw: { args, configuration: request.configuration }, ...(tokenize ? { tokenize } : {}) }
      return { ok: true, value, logs: [] }
    },
    close: async () => {},
  }
}
