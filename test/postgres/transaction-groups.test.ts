import { describe, expect, it } from 'vitest'
import { type GroupedWrite, WriteGroups } from '../../adapters/postgres/groups.js'
import type { Op } from '../../src/store/index.js'

/** A write of `n` ops (lock deletes: what a commit of a large transaction holds many of). */
const writeOf = (n: number) => ({
  checks: [],
  ops: Array.from({ length: n }, (_, i): Op => ({ op: 'lock.delete', tenant_id: 'T', token_id: `t${i}` })),
})

describe('PostgreSQL write groups: a call takes at most 2048 guards and ops of waiting writes', () => {
  it('waiting writes of 1500, 1500, 548, 1, 1, 3000 and 1 ops go as [1500], [1500, 548], [1, 1], [3000], [1]', async () => {
    const sent: number[][] = []
    const groups = new WriteGroups(1, 16, async (_tenant, group: GroupedWrite[]) => {
      sent.push(group.map((w) => w.ops.length))
      for (const w of group) w.resolve({ ok: true })
    })
    groups.began('T')
    const answers = [1500, 1500, 548, 1, 1, 3000, 1].map((n) => groups.add('T', writeOf(n)))
    groups.ended('T')
    await Promise.all(answers)
    expect(sent).toEqual([[1500], [1500, 548], [1, 1], [3000], [1]])
  })

  it('sixteen small writes still go together', async () => {
    const sent: number[] = []
    const groups = new WriteGroups(1, 16, async (_tenant, group: GroupedWrite[]) => {
      sent.push(group.length)
      for (const w of group) w.resolve({ ok: true })
    })
    groups.began('T')
    const answers = Array.from({ length: 17 }, () => groups.add('T', writeOf(3)))
    groups.ended('T')
    await Promise.all(answers)
    expect(sent).toEqual([16, 1])
  })
})
