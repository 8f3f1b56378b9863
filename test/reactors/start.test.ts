import { describe, expect, it } from 'vitest'
import { sandboxRunner, startSandboxWorker } from '../../adapters/sandbox/index.js'

describe('the sandbox runner starts its workers ahead of the first run', () => {
  it('a formula check starts them (a react is likely next); the run then finds them ready', async () => {
    let started = 0
    let ready!: () => void
    const allReady = new Promise<void>((resolve) => {
      ready = resolve
    })
    const runner = sandboxRunner({
      poolSize: 2,
      startWorker: (config) => {
        const worker = startSandboxWorker(config)
        started++
        worker.once('message', () => {
          if (started === 2) ready()
        })
        return worker
      },
    })
    try {
      expect(await runner.check('module.exports = async () => 1')).toBeNull()
      await allReady
      expect(started).toBe(2)
      const outcome = await runner.run(
        'module.exports = async () => ({ raw: 1 })',
        { args: {}, configuration: {} },
        { timeoutMs: 5000 },
      )
      expect(outcome).toEqual({ ok: true, value: { raw: 1 }, logs: [] })
      // No worker was started for the run: it used the two the check started.
      expect(started).toBe(2)
    } finally {
      await runner.close()
    }
  })

  it('a closed runner starts nothing on a check', async () => {
    let started = 0
    const runner = sandboxRunner({
      poolSize: 1,
      startWorker: (config) => {
        started++
        return startSandboxWorker(config)
      },
    })
    await runner.close()
    expect(await runner.check('module.exports = async () => 1')).toBeNull()
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(started).toBe(0)
  })
})
