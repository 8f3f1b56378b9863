/**
 * A list's answer is serialized item by item, giving other requests a turn between items once
 * 64 KiB of text have added up, and its text is exactly `JSON.stringify`'s.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import {
  answerParts,
  answerText,
  STRING_STEP_CHARS,
  sizedAnswerText,
} from '../../adapters/http/answer-text.js'
import { createHttpHandler } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { type Client, createService, manualClock, type Service } from '../../entry/index.js'

afterEach(() => vi.restoreAllMocks())

describe('answer text', () => {
  it('is JSON.stringify’s text for pages and anything else', async () => {
    const values: unknown[] = [
      null,
      'x',
      [1, 2],
      { data: [] },
      { data: [{ a: 1 }] },
      { pagination: { next: 'c"ur' }, data: [{ a: 'é\u2028' }, undefined, null, () => 1, 'y'], z: undefined },
      { data: [1, 2], f: () => 1, nested: { data: [3] } },
      {
        before: 1,
        data: ['x'.repeat(70_000), 'y'.repeat(70_000), { deep: ['z'.repeat(70_000)] }],
        after: [2],
      },
    ]
    for (const value of values) expect(await answerText(value)).toBe(JSON.stringify(value))
  })

  it('counts its UTF-8 bytes as it serializes, pages and anything else', async () => {
    const values: unknown[] = [
      null,
      'é',
      { data: [] },
      { data: ['😀'] },
      {
        pagination: { next: 'é' },
        data: ['a', undefined, 'é'.repeat(70_000), { b: '😀'.repeat(20_000) }],
        z: 1,
      },
      { data: [1, 2], f: () => 1, é: { data: [3] } },
    ]
    for (const value of values) {
      const { text, bytes } = await sizedAnswerText(value)
      expect(text).toBe(JSON.stringify(value))
      expect(bytes).toBe(Buffer.byteLength(text))
    }
  })

  it('as parts: a page’s items are parts of their own, joined they are JSON.stringify’s text, counted', async () => {
    const big = 'é'.repeat(70_000)
    const page = { pagination: { next: 'x' }, data: [{ a: big }, undefined, { b: '😀' }], z: undefined }
    const { parts, chars, bytes } = await answerParts(page)
    const text = JSON.stringify(page)
    expect(parts.join('')).toBe(text)
    expect(chars).toBe(text.length)
    expect(bytes).toBe(Buffer.byteLength(text))
    // The large item is its own part, never copied into a joined text.
    expect(parts).toContain(JSON.stringify({ a: big }))
    expect(await answerParts(() => 1)).toEqual({ parts: [], chars: 0, bytes: 0 })
    expect(await answerParts({ data: [1] })).toEqual({ parts: ['{"data":[1]}'], chars: 12, bytes: 12 })
  })

  it('over the handler: a page of three 70 000-character items lets other work run between items', async () => {
    const service = await createService({ store: memoryStore(), clock: manualClock(), runner: null })
    const tenant = await service.admin.createTenant({ name: 'a' })
    const { key } = await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'a',
      type: 'private',
      permissions: ['token:read'],
    })
    const order: string[] = []
    const item = (i: number) => ({
      toJSON: () => {
        order.push(`item${i}`)
        return 'x'.repeat(70_000)
      },
    })
    const page = { pagination: { next: null }, data: [item(0), item(1), item(2)] }
    const wrap = (client: Client): Client =>
      ({
        get tokens() {
          return { ...client.tokens, listV2: async () => page }
        },
        withCall: (call: Parameters<Client['withCall']>[0]) => wrap(client.withCall(call)),
      }) as unknown as Client
    const wrapped: Service = { ...service, connect: (k, o) => wrap(service.connect(k, o)) }
    const handler = createHttpHandler(wrapped, { log: () => {} })
    let ticking = true
    const tick = () => {
      order.push('tick')
      if (ticking) setImmediate(tick)
    }
    setImmediate(tick)
    const answer = await handler(
      new Request('http://vault.test/v2/tokens', { headers: { 'svc-api-key': key } }),
    )
    ticking = false
    expect(answer.status).toBe(200)
    expect(((await answer.json()) as { data: unknown[] }).data).toHaveLength(3)
    const at = (name: string) => order.indexOf(name)
    expect(order.slice(at('item0'), at('item1'))).toContain('tick')
    expect(order.slice(at('item1'), at('item2'))).toContain('tick')
  })

  it('serializes an item whose data is a large string in steps, a turn each, its text JSON.stringify’s', async () => {
    const step = STRING_STEP_CHARS
    // A pair split across a step's end, escapes, a lone surrogate, characters of two and three bytes.
    const data = `${'a'.repeat(step - 1)}😀${'"\\\n'.repeat(1000)}\ud800x${'é€'.repeat(step)}`
    const page = { data: [{ id: 'a', data, after: [1], gone: undefined }, { data: 'small' }], z: 2 }
    const text = JSON.stringify(page)
    let turns = 0
    let running = true
    const tick = () => {
      turns++
      if (running) setImmediate(tick)
    }
    setImmediate(tick)
    const { parts, chars, bytes } = await answerParts(page)
    running = false
    expect(parts.join('')).toBe(text)
    expect(chars).toBe(text.length)
    expect(bytes).toBe(Buffer.byteLength(text))
    // Its data of more than three steps' characters: a turn before each piece.
    expect(turns).toBeGreaterThanOrEqual(Math.ceil(data.length / step))
    // Not a page of more than one item, or data that is not a string: serialized whole, as before.
    const single = { data: [{ data }] }
    expect((await answerParts(single)).parts).toEqual([JSON.stringify(single)])
    const withToJson = { data: [{ data, toJSON: () => 'x' }, 1] }
    expect((await answerParts(withToJson)).parts.join('')).toBe(JSON.stringify(withToJson))
  })

  it('a large string with nothing to escape is answered as slices of itself, never serialized', async () => {
    const stringify = vi.spyOn(JSON, 'stringify')
    const plain = 'x'.repeat(3 * STRING_STEP_CHARS + 5)
    const page = {
      data: [
        { id: 'a', data: plain },
        { id: 'b', data: `"${plain}` },
      ],
    }
    const expected = JSON.stringify(page)
    stringify.mockClear()
    const { parts } = await answerParts(page)
    expect(parts.join('')).toBe(expected)
    const serialized = stringify.mock.calls.map(([v]) => (typeof v === 'string' ? v.length : -1))
    // Of the eight pieces (3 of STRING_STEP_CHARS and one of 5, then of 6, for each item) only the
    // one holding the `"` is serialized: every piece of both was before.
    expect(serialized.filter((n) => n === STRING_STEP_CHARS)).toHaveLength(1)
    expect(serialized).not.toContain(5)
    expect(serialized).not.toContain(6)
  })
})
