import { describe, expect, it } from 'vitest'
import { sandboxRunner, startSandboxWorker } from '../../adapters/sandbox/index.js'

const CODE = 'module.exports = async (req) => ({ raw: req.args.n })'

describe('sandboxRunner({ idleSpinUs })', () => {
  /** The `idleSpinUs` the runner hands its worker for a given option. */
  async function handed(idleSpinUs?: number): Promise<number | undefined> {
    let given: number | undefined = -1
    const runner = sandboxRunner({
      poolSize: 1,
      ...(idleSpinUs === undefined ? {} : { idleSpinUs }),
      startWorker: (config) => {
        given = config.idleSpinUs
        return startSandboxWorker(config)
      },
    })
    try {
      const outcome = await runner.run(CODE, { args: { n: 7 }, configuration: {} }, { timeoutMs: 120_000 })
      expect(outcome).toEqual({ ok: true, value: { raw: 7 }, logs: [] })
    } finally {
      await runner.close()
    }
    return given
  }

  it('is 200 µs unless given, at most 1000 µs, at least 0 (off)', async () => {
    expect(await handed()).toBe(200)
    expect(await handed(1000)).toBe(1000)
    expect(await handed(1001)).toBe(1000)
    expect(await handed(0)).toBeUndefined()
    expect(await handed(-1)).toBeUndefined()
    expect(await handed(Number.NaN)).toBe(200)
    // Six workers started one after another: over 20 s on a busy machine.
  }, 120_000)
})
