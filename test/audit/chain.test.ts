import { describe, expect, it } from 'vitest'
import { groupMacText, groupText } from '../../src/audit/chain.js'
import { macText } from '../../src/audit/index.js'
import type { LogEntry } from '../../src/kernel/index.js'

/** The text an entry's MAC covers, as it was first defined: `JSON.stringify` of the fields in order. */
const reference = (e: Omit<LogEntry, 'mac'>) =>
  JSON.stringify([
    'tokenvault-audit-v1',
    e.tenant_id,
    e.id,
    e.lane,
    e.seq,
    e.floor === true,
    e.actor_id ?? null,
    e.actor_type,
    e.entity_type,
    e.entity_id ?? null,
    e.operation,
    e.message,
    e.outcome,
    e.request_id ?? null,
    e.created_at,
  ])

const entry: Omit<LogEntry, 'mac'> = {
  tenant_id: 'c3f1b2a4-1234-4abc-9def-0123456789ab',
  id: 'AbCdEfGhIjKl.000003:000000001234',
  lane: 'AbCdEfGhIjKl.000003',
  seq: 1234,
  actor_id: 'a1b2c3d4-1234-4abc-9def-0123456789ab',
  actor_type: 'application',
  entity_type: 'token',
  entity_id: 'f1e2d3c4-1234-4abc-9def-0123456789ab',
  operation: 'read',
  message: 'token.get: answered masked',
  outcome: 'success',
  request_id: 'req-1',
  created_at: '2030-01-01T00:00:00.000Z',
}

describe('macText', () => {
  it('writes the same text as JSON.stringify of the fields, for plain and escaped strings alike', () => {
    const awkward = [
      'plain',
      '',
      'a "quoted" word',
      'back\\slash',
      'new\nline, tab\t, nul \u0000, unit \u001f, del \u007f',
      'line sep \u2028 para sep \u2029',
      'pair 😀 ok',
      'lone high \ud800 and low \udc00',
      'é ü 日本',
    ]
    for (const s of awkward) {
      for (const field of ['tenant_id', 'id', 'lane', 'actor_type', 'message', 'request_id'] as const) {
        const e = { ...entry, [field]: s }
        expect(macText(e)).toBe(reference(e))
      }
    }
  })

  it('writes absent, floor and seq fields as JSON.stringify does', () => {
    const { actor_id: _a, entity_id: _e, request_id: _r, ...bare } = entry
    expect(macText(bare)).toBe(reference(bare))
    expect(macText({ ...entry, floor: true })).toBe(reference({ ...entry, floor: true }))
    expect(macText({ ...entry, seq: 0 })).toBe(reference({ ...entry, seq: 0 }))
  })

  it('writes a field a stored entry holds with the wrong type as JSON.stringify does (verification sees it)', () => {
    const odd = [
      { ...entry, seq: '1234' },
      { ...entry, seq: 1.5 },
      { ...entry, seq: Number.NaN },
      { ...entry, message: 42 },
      { ...entry, entity_id: null },
      { ...entry, outcome: undefined },
      { ...entry, operation: { x: 1 } },
    ] as unknown as Omit<LogEntry, 'mac'>[]
    for (const e of odd) expect(macText(e)).toBe(reference(e))
    expect(macText(odd[0]!)).not.toBe(macText(entry))
  })
})

describe('groupMacText', () => {
  it("writes the same text as groupText of each entry's macText, fields repeated, changed or absent", () => {
    const { actor_id: _a, entity_id: _e, request_id: _r, ...bare } = entry
    const group: Omit<LogEntry, 'mac'>[] = [
      entry,
      { ...entry, seq: 1235, entity_id: 'other' },
      { ...entry, seq: 1236 },
      { ...bare, seq: 1237 },
      { ...entry, seq: 1238, message: 'a "quoted" word', floor: true },
      { ...entry, seq: 1239, message: 'a "quoted" word' },
      { ...entry, seq: 1240, outcome: undefined, operation: { x: 1 } } as unknown as Omit<LogEntry, 'mac'>,
      { ...entry, seq: 1241, entity_id: null } as unknown as Omit<LogEntry, 'mac'>,
      { ...entry, seq: Number.NaN, request_id: 'lone \ud800' },
    ]
    for (let n = 0; n <= group.length; n++) {
      const part = group.slice(0, n)
      expect(groupMacText(part)).toBe(groupText(part.map(macText)))
    }
    expect(groupMacText([entry])).toBe(reference(entry))
  })
})
