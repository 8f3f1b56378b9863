import { describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { closed, startChild, tempDir } from './helpers.js'

const LONG = process.env['TOKENVAULT_LONG'] === '1'
/** Kill points per lane; two lanes run side by side, each in its own directory. */
const KILLS = LONG ? 100 : 12
const LANES = 2
const MAX_BATCHES = 300
const WRITERS = 64

/**
 * Runs one child that writes batches into `dir` from 64 concurrent writers, and SIGKILLs it at a
 * random moment: usually after a random number of acknowledgements, sometimes at a random time
 * after spawning (during startup). Returns the ids of the batches it acknowledged.
 */
async function runAndKill(dir: string, prefix: string, random: () => number): Promise<string[]> {
  const child = startChild(['write', dir, prefix, String(MAX_BATCHES), String(WRITERS)])
  const acked: string[] = []
  const killAfter = Math.floor(random() * MAX_BATCHES)
  let buffered = ''
  let stderr = ''
  const kill = () => child.kill('SIGKILL')
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString()
    const lines = buffered.split('\n')
    buffered = lines.pop() ?? ''
    for (const line of lines) {
      if (line.startsWith('ack ')) acked.push(line.slice(4))
      if (line === 'done' || (line === 'ready' && killAfter === 0)) kill()
    }
    if (acked.length >= killAfter && killAfter > 0) kill()
  })
  const timer = random() < 0.15 ? setTimeout(kill, random() * 400) : undefined
  await closed(child)
  clearTimeout(timer)
  if (child.signalCode !== 'SIGKILL') throw new Error(`child exited by itself (${child.exitCode}): ${stderr}`)
  return acked
}

/** Checks the reopened store: every acknowledged batch whole, no batch in part. */
async function verify(dir: string, acknowledged: Set<string>) {
  const store = await fileStore({ path: dir })
  try {
    const dump = await store.dump()
    const tokens = new Set(dump.tokens.map((t) => t.id))
    const links = new Set(dump.associations.map((a) => `${a.parent_id}>${a.child_id}`))
    const batches = new Set([...tokens].map((id) => id.replace(/-[ab]$/, '')))
    for (const id of acknowledged) expect(batches.has(id), `acknowledged batch ${id} lost`).toBe(true)
    for (const id of batches) {
      const parts = [tokens.has(`${id}-a`), tokens.has(`${id}-b`), links.has(`${id}-a>${id}-b`)]
      expect(parts, `batch ${id} is partly there`).toEqual([true, true, true])
    }
    return batches.size
  } finally {
    await store.close()
  }
}

/** A small seeded generator, so a failing run can be repeated with its seed. */
function mulberry32(seed: number) {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

describe('file store under SIGKILL', () => {
  const seed = Number(process.env['TOKENVAULT_TEST_SEED'] ?? Date.now() % 1e9)

  it(
    `keeps every batch acknowledged to ${WRITERS} concurrent writers whole across ${KILLS * LANES} kills (seed ${seed})`,
    async () => {
      const lane = async (laneNo: number) => {
        const dir = await tempDir()
        const random = mulberry32(seed + laneNo)
        const acknowledged = new Set<string>()
        let present = 0
        for (let kill = 0; kill < KILLS; kill++) {
          for (const id of await runAndKill(dir, `l${laneNo}k${kill}`, random)) acknowledged.add(id)
          present = await verify(dir, acknowledged)
        }
        return { acknowledged: acknowledged.size, present }
      }
      const results = await Promise.all(Array.from({ length: LANES }, (_, i) => lane(i)))
      for (const r of results) {
        expect(r.acknowledged).toBeGreaterThan(0)
        expect(r.present).toBeGreaterThanOrEqual(r.acknowledged)
      }
    },
    LONG ? 600_000 : 180_000,
  )
})
