import { afterEach, describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createTestVault, type TestVault } from '../../testing/vault.js'

const open: TestVault[] = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((v) => v.close()))
})

async function seeded() {
  const vault = await createTestVault()
  open.push(vault)
  const client = vault.client()
  const a = await client.tokens.create({ type: 'token', data: 'seeded-a' })
  const b = await client.tokens.create({ type: 'token', data: 'seeded-b' })
  return { vault, a: a.id, b: b.id }
}

const fork = (vault: TestVault) => {
  const f = vault.fork()
  open.push(f)
  return f
}

const ids = async (vault: TestVault) => (await vault.client().tokens.list()).data.map((t) => t.id).sort()

describe('vault.fork', () => {
  it('a fork holds the whole state, keys and clock time of its parent', async () => {
    const { vault, a, b } = await seeded()
    vault.clock.advance(60_000)
    const child = fork(vault)
    expect(await ids(child)).toEqual([a, b].sort())
    expect((await child.client().tokens.get(a)).data).toBe('seeded-a')
    expect(child.keys).toEqual(vault.keys)
    expect(child.clock.now()).toEqual(vault.clock.now())
    expect(child.leaks.find('seeded-b')).toHaveLength(1)
  })

  it("a fork's writes never reach its parent or its siblings", async () => {
    const { vault, a, b } = await seeded()
    const one = fork(vault)
    const two = fork(vault)
    const made = await one.client().tokens.create({ type: 'token', data: 'only-in-one' })
    await one.client().tokens.update(a, { data: 'changed-in-one' })
    await one.client().tokens.delete(b)
    expect(await ids(vault)).toEqual([a, b].sort())
    expect(await ids(two)).toEqual([a, b].sort())
    expect((await vault.client().tokens.get(a)).data).toBe('seeded-a')
    expect((await two.client().tokens.get(a)).data).toBe('seeded-a')
    expect(await ids(one)).toEqual([a, made.id].sort())
    expect(vault.leaks.find('only-in-one changed-in-one')).toEqual([])
    expect(two.leaks.find('only-in-one changed-in-one')).toEqual([])
    expect(one.leaks.find('only-in-one changed-in-one')).toHaveLength(2)
    expect(one.leaks.find('seeded-b seeded-a')).toEqual([])
    expect(vault.leaks.find('seeded-b seeded-a')).toHaveLength(2)
  })

  it("the parent's later writes never reach a fork", async () => {
    const { vault, a } = await seeded()
    const child = fork(vault)
    await vault.client().tokens.delete(a)
    const later = await vault.client().tokens.create({ type: 'token', data: 'parent-later' })
    expect((await child.client().tokens.get(a)).data).toBe('seeded-a')
    await expect(child.client().tokens.get(later.id)).rejects.toMatchObject({ code: 'not_found' })
    expect(child.leaks.find('parent-later')).toEqual([])
    expect(child.leaks.find('seeded-a')).toHaveLength(1)
  })

  it('forks of forks stay apart, and each counts its own exposure and clock', async () => {
    const { vault, a } = await seeded()
    await vault.client().tokens.get(a)
    const child = fork(vault)
    const grandchild = fork(child)
    await grandchild.client().tokens.get(a)
    await grandchild.client().tokens.create({ type: 'token', data: 'grandchild-only' })
    grandchild.clock.advance(1000)
    expect(vault.exposure().total).toBe(1)
    expect(child.exposure().total).toBe(0)
    expect(grandchild.exposure().total).toBe(1)
    expect(child.clock.now()).toEqual(vault.clock.now())
    expect((await child.client().tokens.list()).data).toHaveLength(2)
    expect(child.leaks.find('grandchild-only')).toEqual([])
  })

  it('needs the default memory store', async () => {
    const vault = await createTestVault({ store: memoryStore() })
    open.push(vault)
    expect(() => vault.fork()).toThrow('vault.fork() needs the default memory store')
  })
})
