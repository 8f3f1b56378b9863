/**
 * The file store's compaction pause: how long the event loop is blocked while a compaction
 * serialises the state (every call waits that long), for 100k tokens (10k with BENCH_QUICK=1).
 *
 *   node --expose-gc --import tsx bench/compaction.ts
 *
 * Two states: tokens only, and tokens with associations (linked out of id order) plus an open
 * transaction holding locks. For each, the median and worst of several compactions of
 * - "pause": the longest event-loop stall seen while `store.compact()` runs (a `setImmediate` probe);
 * - "encode": `encodeSnapshot` alone, the synchronous step that makes the pause.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileStore } from '../adapters/file/index.js'
import { encodeSnapshot } from '../adapters/file/snapshot.js'
import { MemoryState } from '../src/store/memory-state.js'
import type { Op } from '../src/types.js'

const TENANT = 'bench-tenant'
const CREATED = '2030-01-01T00:00:00.000Z'
const quick = process.env.BENCH_QUICK === '1'
const tokens = quick ? 10_000 : 100_000
const rounds = quick ? 3 : 7

const tokenOp = (id: string): Op => ({
  op: 'token.put',
  token: {
    id,
    tenant_id: TENANT,
    type: 'card',
    data: { number: '4242424242424242', exp: '12/30' },
    containers: ['/general/high/'],
    metadata: { owner: 'ann' },
    created_by: 'bench-app',
    created_at: CREATED,
  },
})

/** Batches of ops for `tokens` tokens; with `linked`, half of them children of 1 in 20 others, plus a locking transaction. */
function seed(linked: boolean): Op[][] {
  const batches: Op[][] = []
  for (let i = 0; i < tokens; i += 1000) {
    batches.push(Array.from({ length: Math.min(1000, tokens - i) }, (_, j) => tokenOp(`t${i + j}`)))
  }
  if (!linked) return batches
  const links: Op[] = []
  for (let p = 0; p < tokens / 20; p++) {
    // Ten children per parent, linked in descending id order.
    for (let c = 10; c >= 1; c--) {
      links.push({
        op: 'association.put',
        association: {
          tenant_id: TENANT,
          parent_id: `t${p}`,
          child_id: `t${tokens / 20 + p * 10 + c - 1}`,
          created_at: CREATED,
        },
      })
    }
  }
  for (let i = 0; i < links.length; i += 1000) batches.push(links.slice(i, i + 1000))
  const locks = Array.from({ length: 1000 }, (_, i) => `t${tokens - 1 - i}`)
  batches.push([
    {
      op: 'transaction.put',
      transaction: {
        id: 'tx-1',
        tenant_id: TENANT,
        created_at: CREATED,
        created_by: 'bench-app',
        expires_at: '2099-01-01T00:00:00.000Z',
        state: 'open',
        writes: locks.slice(0, 100).map(tokenOp),
        locks,
      },
    },
  ])
  return batches
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const ms = (x: number) => `${x.toFixed(0)} ms`

/** Runs `fn` while a `setImmediate` chain records the longest gap between its turns. */
async function longestStall(fn: () => Promise<unknown>): Promise<number> {
  let last = performance.now()
  let longest = 0
  let running = true
  const tick = () => {
    const now = performance.now()
    longest = Math.max(longest, now - last)
    last = now
    if (running) setImmediate(tick)
  }
  setImmediate(tick)
  await fn()
  running = false
  tick()
  return longest
}

async function measure(name: string, linked: boolean) {
  const dir = await mkdtemp(join(tmpdir(), 'tokenvault-bench-compact-'))
  try {
    const store = await fileStore({ path: dir, durability: 'none', compactMinBytes: Number.MAX_SAFE_INTEGER })
    const state = new MemoryState()
    for (const ops of seed(linked)) {
      await store.write({ ops })
      state.write({ ops })
    }
    const pauses: number[] = []
    const encodes: number[] = []
    let bytes = 0
    for (let round = 0; round < rounds; round++) {
      globalThis.gc?.()
      pauses.push(await longestStall(() => store.compact()))
      globalThis.gc?.()
      const start = performance.now()
      bytes = encodeSnapshot(state, round + 1).length
      encodes.push(performance.now() - start)
    }
    await store.close()
    console.log(
      `${name}: pause median ${ms(median(pauses))}, worst ${ms(Math.max(...pauses))}; ` +
        `encode median ${ms(median(encodes))}, worst ${ms(Math.max(...encodes))}; ` +
        `snapshot ${(bytes / 1e6).toFixed(1)} MB`,
    )
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

console.log(`Node ${process.version}, ${tokens.toLocaleString('en-US')} tokens, ${rounds} compactions each`)
await measure('tokens only', false)
await measure('tokens + links + locking transaction', true)
