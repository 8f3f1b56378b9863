import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { sandboxRunner, startSandboxWorker } from '../../adapters/sandbox/index.js'

/**
 * A runner of two workers that counts the workers it starts; `allReady` once two have answered.
 * On a loaded machine a worker slower than the start timeout is replaced, so the count of starts
 * may pass two before two are ready: the promise checked is that a run starts none of its own.
 */
function countingRunner() {
  let started = 0
  let answered = 0
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
        answered++
        if (answered === 2) ready()
      })
      return worker
    },
  })
  return { runner, started: () => started, allReady }
}

describe('the sandbox runner starts its workers ahead of the first run', () => {
  it('a formula check finds them started; the run then uses them, starting none', async () => {
    const { runner, started, allReady } = countingRunner()
    try {
      expect(await runner.check('module.exports = async () => 1')).toBeNull()
      await allReady
      const before = started()
      expect(before).toBeGreaterThanOrEqual(2)
      const outcome = await runner.run(
        'module.exports = async () => ({ raw: 1 })',
        { args: {}, configuration: {} },
        { timeoutMs: 120_000 },
      )
      expect(outcome).toEqual({ ok: true, value: { raw: 1 }, logs: [] })
      // No worker was started for the run: it used the two the check started.
      expect(started()).toBe(before)
    } finally {
      await runner.close()
    }
  }, 120_000)

  it('a runner starts them when it is made: the first run finds them ready, no check needed', async () => {
    const { runner, started, allReady } = countingRunner()
    try {
      await allReady
      const before = started()
      expect(before).toBeGreaterThanOrEqual(2)
      const outcome = await runner.run(
        'module.exports = async () => ({ raw: 2 })',
        { args: {}, configuration: {} },
        { timeoutMs: 120_000 },
      )
      expect(outcome).toEqual({ ok: true, value: { raw: 2 }, logs: [] })
      expect(started()).toBe(before)
    } finally {
      await runner.close()
    }
  }, 120_000)

  it("a worker starts without the host's Node flags: a module the host preloads is not run in it", () => {
    const dir = mkdtempSync(join(tmpdir(), 'tokenvault-flags-'))
    try {
      const marker = join(dir, 'loads.txt')
      const preload = join(dir, 'preload.cjs')
      // Each thread that loads it writes whether it is a sandbox worker (its start data has `memoryMb`).
      writeFileSync(
        preload,
        `const { workerData } = require('node:worker_threads')
        const sandbox = typeof workerData?.memoryMb === 'number'
        require('node:fs').appendFileSync(${JSON.stringify(marker)}, (sandbox ? 'sandbox' : 'other') + '\\n')`,
      )
      const index = new URL('../../adapters/sandbox/index.ts', import.meta.url).href
      const script = `const { sandboxRunner } = await import(${JSON.stringify(index)})
        const runner = sandboxRunner({ poolSize: 1 })
        const outcome = await runner.run('module.exports = async () => ({ raw: 1 })', { args: {}, configuration: {} }, { timeoutMs: 120_000 })
        await runner.close()
        console.log(JSON.stringify(outcome))`
      const root = fileURLToPath(new URL('../..', import.meta.url))
      const out = execFileSync(
        process.execPath,
        ['--require', preload, '--import', 'tsx', '--input-type=module', '-e', script],
        { cwd: root, encoding: 'utf8', timeout: 30_000 },
      )
      expect(JSON.parse(out.trim())).toEqual({ ok: true, value: { raw: 1 }, logs: [] })
      // In the host (and the threads of its own loader), never in a sandbox worker.
      const loads = readFileSync(marker, 'utf8').trim().split('\n')
      expect(loads).toContain('other')
      expect(loads).not.toContain('sandbox')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 30_000)

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
