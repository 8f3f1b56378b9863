/**
 * Any honest history of one process's writes verifies: writes in flight on lanes (waiting for one
 * past the bound), each ending acknowledged, refused or of unknown outcome (landed or not), a new
 * writer started when a tenant opened its share of lanes, and retention cuts (by age, and the
 * oldest past a bound) between them, writes still in flight. And in
 * such a history, an entry removed that has a later entry on its lane is always found.
 */
import { createHmac } from 'node:crypto'
import fc from 'fast-check'
import { describe, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { chained, type HeldLane, Lanes } from '../../src/audit/chain.js'
import type { EntryDraft } from '../../src/audit/index.js'
import { removeOldEntries, removeOldestEntries, verifyLogs } from '../../src/audit/index.js'
import type { LogEntry } from '../../src/kernel/index.js'
import { assertProperty } from '../../testing/store/seed.js'

/** Fixed, so a run repeats; a failure prints the TOKENVAULT_TEST_SEED that replays its shrunk history. */
const SEED = 20_261_204

const mac = (tenantId: string, values: readonly string[]) =>
  values.map((v) => createHmac('sha256', `key-of-${tenantId}`).update(v).digest('base64url'))

const at = (minute: number) => new Date(Date.UTC(2030, 0, 1, 0, minute)).toISOString()

const draft = (name: string, minute: number): EntryDraft => ({
  tenant_id: 't1',
  actor_type: 'application',
  entity_type: 'token',
  entity_id: name,
  operation: 'read',
  message: 'token.get: answered masked',
  outcome: 'success',
  created_at: at(minute),
})

type End = 'ok' | 'refused' | 'landed' | 'lost'
type Step = { begin: number } | { end: number; how: End } | { tick: true } | { cut: true } | { trim: number }

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 1, max: 3 }).map((n) => ({ begin: n })) },
  {
    weight: 4,
    arbitrary: fc.record({
      end: fc.nat(),
      how: fc.constantFrom<End>('ok', 'ok', 'ok', 'refused', 'landed', 'lost'),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ tick: true as const }) },
  { weight: 1, arbitrary: fc.constant({ cut: true as const }) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 6 }).map((n) => ({ trim: n })) },
)

/** A write holding its lane, with the minute it began and its entries' size. */
interface Write {
  held: HeldLane
  minute: number
  size: number
}

/** Plays `steps` on a memory store through `Lanes` (3 lanes held at once, 4 opened a writer). */
async function play(steps: readonly Step[]) {
  const store = memoryStore()
  const lanes = new Lanes({ held: 3, perWriter: 4 })
  const inFlight: Write[] = []
  let waiting = 0
  let minute = 0
  let names = 0
  const landing = (writer: string) => lanes.landingFrom(writer, 't1')
  const begin = (size: number) => {
    const begun = minute
    const taken = lanes.acquire('t1', size)
    if (!(taken instanceof Promise)) return void inFlight.push({ held: taken, minute: begun, size })
    waiting++
    void taken.then((held) => {
      waiting--
      inFlight.push({ held, minute: begun, size })
    })
  }
  const end = async (w: Write, how: End) => {
    if (how !== 'refused' && how !== 'lost') {
      const drafts = Array.from({ length: w.size }, () => draft(`n${names++}`, w.minute))
      const entries = (await chained(mac, w.held, drafts)) as LogEntry[]
      await store.write({ ops: entries.map((entry) => ({ op: 'log.put' as const, entry })) })
    }
    lanes.settle(w.held, how === 'ok' ? 'ok' : how === 'refused' ? 'refused' : 'unknown')
    for (let i = 0; i < 5; i++) await Promise.resolve()
  }
  for (const s of steps) {
    if ('begin' in s) begin(s.begin)
    else if ('tick' in s) minute++
    else if ('end' in s && inFlight.length) await end(inFlight.splice(s.end % inFlight.length, 1)[0]!, s.how)
    // Retention cuts while writes are in flight, before the first id they may land at.
    else if ('cut' in s) await removeOldEntries(store, mac, 't1', at(minute), at(minute), { landing })
    else if ('trim' in s) await removeOldestEntries(store, mac, 't1', s.trim, at(minute), landing)
  }
  while (inFlight.length || waiting) {
    if (inFlight.length) await end(inFlight.shift()!, 'ok')
    else await Promise.resolve()
  }
  return store
}

describe('audit lanes (property)', () => {
  it('an honest history verifies, and an entry removed before another of its lane is found', async () => {
    await assertProperty(
      fc.asyncProperty(fc.array(step, { minLength: 30, maxLength: 150 }), async (steps) => {
        const store = await play(steps)
        const verdict = await verifyLogs(store, mac, 't1')
        if (!verdict.ok) throw new Error(`an honest history failed: ${JSON.stringify(verdict.broken)}`)
        const all = await store.listLogs('t1', { order: 'chain', limit: 10_000 })
        const victim = all.find(
          (e) => e.operation !== 'log.retention' && all.some((l) => l.lane === e.lane && l.seq > e.seq),
        )
        if (!victim) return
        await store.write({ ops: [{ op: 'log.delete', tenant_id: 't1', id: victim.id }] })
        const after = await verifyLogs(store, mac, 't1')
        if (after.ok) throw new Error(`the removal of ${victim.id} was not found`)
      }),
      { seed: SEED, numRuns: 200, endOnFailure: true },
    )
  }, 60_000)
})
