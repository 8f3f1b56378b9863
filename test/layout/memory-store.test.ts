/**
 * The memory store is composed, not inherited: its records are one plain object of maps and the
 * store is functions over it. The one class left is `MemoryState` (the test kit's `ReferenceModel`,
 * which users make with `new`), and it extends nothing: it holds the maps and hands each method to
 * the function of its name.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { MemoryState } from '../../adapters/memory/state.js'

const dir = fileURLToPath(new URL('../../adapters/memory/', import.meta.url))

describe('the memory store’s shape', () => {
  it('holds one class, MemoryState, and no class extends another', () => {
    const lines = readdirSync(dir)
      .filter((name) => name.endsWith('.ts'))
      .flatMap((name) => readFileSync(join(dir, name), 'utf8').split('\n'))
    const classes = lines.flatMap((line) => /^\s*(?:export\s+)?class\s+(\w+)/.exec(line)?.[1] ?? [])
    expect(classes).toEqual(['MemoryState'])
    expect(lines.filter((line) => /\bclass\s+\w+.*\bextends\b/.test(line))).toEqual([])
  })

  it('keeps its records in a plain object: a state’s maps are an object of the Object prototype', () => {
    const { maps } = new MemoryState()
    expect(Object.getPrototypeOf(maps)).toBe(Object.prototype)
    for (const part of [maps.proxies, maps.clientKeys, maps.intents, maps.documents, maps.logs, maps.hooks])
      expect(Object.getPrototypeOf(part)).toBe(Object.prototype)
  })

  it('is a plain object of functions, each an own property (a caller may spread or wrap it)', async () => {
    const store = memoryStore()
    expect(Object.getPrototypeOf(store)).toBe(Object.prototype)
    expect(Object.values(store).every((member) => typeof member === 'function')).toBe(true)
    const tenant = { id: 't1', name: 'one', created_at: '2030-01-01T00:00:00.000Z' }
    expect(await store.write({ ops: [{ op: 'tenant.put', tenant }] })).toEqual({ ok: true })
    expect(await store.getTenant('t1')).toEqual(tenant)
    await store.close()
  })
})
