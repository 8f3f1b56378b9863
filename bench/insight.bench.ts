/**
 * Test insight: the leak check and the fork, at the sizes the design names.
 *
 * - `leaks.check` of 1 MB of log-like text against 100 000 held plaintexts (each a card number, a
 *   name and an email: 300 000 plaintexts, every encoding), and of 1 KB; goals ≤ 50 ms and
 *   ≤ 0.1 ms. The index is built once (its build time is printed apart). Floor: one
 *   `String.prototype.indexOf` of a string that is not there over the same text, which reads every
 *   character once, as the check must.
 * - `vault.fork()` of a test vault holding 1 000 and 100 000 tokens; goals ≤ 1 ms at 100 000 and
 *   ≤ 1.5× the fork of 1 000. Also printed: what the first write after a fork costs (it copies the
 *   state's containers), which is not independent of the tokens held.
 *
 * Times are the median CPU time of this process (user + system), not wall time: on a busy shared
 * machine wall time also counts other processes. Run: `npm run bench:insight` (`BENCH_QUICK=1` for
 * fewer rounds).
 */
import { randomInt } from 'node:crypto'
import type { StoredToken } from '../src/kernel/types.js'
import { forkableMemoryStore } from '../testing/insight/fork-store.js'
import { findLeaks } from '../testing/insight/leak-check.js'
import { LeakIndex } from '../testing/insight/leak-index.js'
import { createTestVault } from '../testing/vault.js'

const QUICK = process.env['BENCH_QUICK'] === '1'
const digits = (n: number) => Array.from({ length: n }, () => String(randomInt(10))).join('')

/**
 * The median of `rounds` timings of `fn`, in milliseconds of this process's CPU time (user and
 * system): on a shared, busy machine, wall time counts the time other processes held the cores.
 */
function median(rounds: number, fn: () => void): number {
  const times: number[] = []
  for (let i = 0; i < rounds; i++) {
    const t = process.cpuUsage()
    fn()
    const used = process.cpuUsage(t)
    times.push((used.user + used.system) / 1000)
  }
  times.sort((a, b) => a - b)
  return times[Math.floor(times.length / 2)]!
}

/** Log-like text of about `bytes` characters holding no plaintext of the index. */
function logText(bytes: number): string {
  const lines: string[] = []
  let size = 0
  for (let i = 0; size < bytes; i++) {
    const line = `2030-01-01T00:00:${String(i % 60).padStart(2, '0')}Z info order=${i} user=u${digits(5)} amount=${randomInt(10_000)} status=ok ref=${Buffer.from(digits(9)).toString('base64')}\n`
    lines.push(line)
    size += line.length
  }
  return lines.join('').slice(0, bytes)
}

function leakRows(): void {
  const index = new LeakIndex()
  const t = performance.now()
  for (let i = 0; i < 100_000; i++) {
    const data = {
      number: `4000${digits(12)}`,
      name: `Holder ${digits(6)} Name`,
      email: `user${digits(8)}@example.com`,
    }
    index.set(`t${i}`, `tok-${i}`, data)
  }
  const buildMs = performance.now() - t
  const mb = logText(1_000_000)
  const kb = mb.slice(0, 1000)
  const warm = findLeaks(index, mb)
  if (warm.length) throw new Error(`the bench text holds ${warm.length} plaintexts`)
  const rounds = QUICK ? 5 : 21
  // The floor reads every character once, as the check must (a rare first character would let
  // indexOf skip ahead with memchr).
  const floor = median(rounds, () => {
    let sum = 0
    for (let i = 0; i < mb.length; i++) sum = (sum + mb.charCodeAt(i)) | 0
    if (sum === 0.5) console.log(sum)
  })
  const check = median(rounds, () => findLeaks(index, mb))
  const small = median(rounds * 100, () => findLeaks(index, kb))
  console.log(
    `leak index: 100000 tokens, 300000 plaintexts, ${index.size} forms, built in ${buildMs.toFixed(0)} ms`,
  )
  console.log(
    `leaks.check 1 MB vs 100000 tokens: ${check.toFixed(2)} ms (goal ≤ 50 ms); floor (a read of each character) ${floor.toFixed(2)} ms; ratio ${(check / floor).toFixed(1)}×`,
  )
  console.log(`leaks.check 1 KB vs 100000 tokens: ${(small * 1000).toFixed(1)} µs (goal ≤ 100 µs)`)
}

/** A test vault whose store holds `n` tokens, put straight into the store (no service calls). */
async function vaultOf(n: number) {
  const store = forkableMemoryStore()
  const vault = await createTestVault({ store })
  const ops = []
  for (let i = 0; i < n; i++) {
    const token: StoredToken = {
      id: `tok-${String(i).padStart(8, '0')}`,
      tenant_id: vault.tenant.id,
      type: 'token',
      data: `value-${i}`,
      containers: ['/general/high/'],
      metadata: {},
      created_by: vault.applications.private.id,
      created_at: '2030-01-01T00:00:00.000Z',
    }
    ops.push({ op: 'token.put' as const, token })
  }
  await store.write({ ops })
  return vault
}

async function forkRows(): Promise<void> {
  const rounds = QUICK ? 21 : 201
  const results: Record<number, { fork: number; firstWrite: number }> = {}
  for (const n of [1_000, 100_000]) {
    const vault = await vaultOf(n)
    const forks: ReturnType<typeof vault.fork>[] = []
    const fork = median(rounds, () => {
      forks.push(vault.fork())
    })
    const first = forks[0]!
    const t = process.cpuUsage()
    await first.client().tokens.create({ type: 'token', data: 'first write' })
    const used = process.cpuUsage(t)
    const firstWrite = (used.user + used.system) / 1000
    results[n] = { fork, firstWrite }
    await Promise.all(forks.map((f) => f.close()))
    await vault.close()
  }
  const [a, b] = [results[1_000]!, results[100_000]!]
  console.log(
    `vault.fork() at 1000 tokens: ${a.fork.toFixed(3)} ms; at 100000: ${b.fork.toFixed(3)} ms (goal ≤ 1 ms); ratio ${(b.fork / a.fork).toFixed(2)}× (goal ≤ 1.5×)`,
  )
  console.log(
    `first write after a fork (copies the state's containers): ${a.firstWrite.toFixed(1)} ms at 1000, ${b.firstWrite.toFixed(1)} ms at 100000`,
  )
}

leakRows()
await forkRows()
