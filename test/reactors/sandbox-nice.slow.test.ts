import { execFileSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { sandboxRunner, startSandboxWorker } from '../../adapters/sandbox/index.js'
import { threadNiceness } from '../support/threads.js'

const root = fileURLToPath(new URL('../..', import.meta.url))
const CODE = 'module.exports = async (req) => ({ raw: req.args.n })'

/** This process's threads: id → niceness (the 19th field of each thread's stat). */
function threads(): Map<string, number> {
  const out = new Map<string, number>()
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      out.set(tid, threadNiceness('self', tid))
    } catch {}
  }
  return out
}

describe('sandboxRunner({ nice })', () => {
  /** The `nice` the runner hands its worker, and the niceness of the threads started meanwhile. */
  async function handed(nice?: number): Promise<{ given: number | undefined; started: number[] }> {
    let given: number | undefined = -1
    const before = threads()
    const runner = sandboxRunner({
      poolSize: 1,
      ...(nice === undefined ? {} : { nice }),
      startWorker: (config) => {
        given = config.nice
        return startSandboxWorker(config)
      },
    })
    try {
      const outcome = await runner.run(CODE, { args: { n: 7 }, configuration: {} }, { timeoutMs: 120_000 })
      expect(outcome).toEqual({ ok: true, value: { raw: 7 }, logs: [] })
      const started = [...threads()].filter(([tid]) => !before.has(tid)).map(([, n]) => n)
      return { given, started }
    } finally {
      await runner.close()
    }
  }

  it.runIf(process.platform === 'linux')(
    "runs tenant code on threads at niceness 10 unless given, at most 19, 0 leaving them at the host's",
    async () => {
      const byDefault = await handed()
      expect(byDefault.given).toBe(10)
      expect(byDefault.started).toContain(10)
      const least = await handed(19)
      expect(least.given).toBe(19)
      expect(least.started).toContain(19)
      expect((await handed(20)).given).toBe(19)
      const off = await handed(0)
      expect(off.given).toBeUndefined()
      expect(off.started.length).toBeGreaterThan(0)
      expect(off.started.every((n) => n === 0)).toBe(true)
    },
    120_000,
  )
})

describe('sandboxRunner({ nice }) in a host that is niced already', () => {
  it.runIf(process.platform === 'linux')(
    "adds to the host's niceness: a host at 5 runs tenant code at 15, one at 15 at 19",
    async () => {
      const script = `
        import { readdirSync } from 'node:fs'
        import { sandboxRunner } from './adapters/sandbox/index.ts'
        import { threadNiceness } from './test/support/threads.ts'
        const niceOf = (tid) => threadNiceness('self', tid)
        const before = new Set(readdirSync('/proc/self/task'))
        const runner = sandboxRunner({ poolSize: 1 })
        await runner.run('module.exports = async () => ({ raw: 1 })', { args: {}, configuration: {} }, { timeoutMs: 120000 })
        console.log(JSON.stringify(readdirSync('/proc/self/task').filter((t) => !before.has(t)).map(niceOf)))
        await runner.close()
      `
      const run = (n: number) =>
        JSON.parse(
          execFileSync(
            'nice',
            ['-n', String(n), process.execPath, '--import', 'tsx', '--input-type=module', '-e', script],
            {
              cwd: root,
              encoding: 'utf8',
            },
          ).trim(),
        ) as number[]
      expect(run(5)).toContain(15)
      expect(run(15)).toContain(19)
    },
    120_000,
  )
})
