import { MessageChannel } from 'node:worker_threads'
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import {
  answerStoreCall,
  answerStoreCalls,
  type StoreCall,
  storeOverThread,
} from '../../adapters/thread-store/index.js'
import { type Store, StoreError } from '../../src/store/index.js'
import { storeContract } from '../../testing/store/suite.js'

/**
 * A store held on the other side of a message channel, as the heavy lane of `tokenvault serve`
 * reaches the main thread's memory store: every call and its answer copied by `postMessage`.
 */
function overChannel(held: Store = memoryStore()): Store {
  const { port1, port2 } = new MessageChannel()
  port2.on('message', async (calls: StoreCall[]) => port2.postMessage(await answerStoreCalls(held, calls)))
  const remote = storeOverThread((calls) => port1.postMessage(calls))
  port1.on('message', remote.settle)
  port1.unref()
  port2.unref()
  return remote.store
}

storeContract({ name: 'memory, over a message channel', open: async () => overChannel() })

describe('a store over a message channel', () => {
  it("answers a StoreError of the holder's store as a StoreError of its code, retry-after kept", async () => {
    const held = memoryStore()
    const failing = {
      ...held,
      getTenant: () => Promise.reject(new StoreError('unavailable', 'down for now', { retryAfter: 3 })),
      hasTenants: () => Promise.reject(new TypeError('not a store error')),
    } as Store
    const store = overChannel(failing)
    const error = await store.getTenant('t').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(StoreError)
    expect(error).toMatchObject({ code: 'unavailable', message: 'down for now', retryAfter: 3 })
    const plain = await store.hasTenants().catch((e: unknown) => e)
    expect(plain).not.toBeInstanceOf(StoreError)
    expect(plain).toMatchObject({ message: 'not a store error' })
  })

  it("answers copies: a result changed by the caller leaves the holder's record as it was", async () => {
    const held = memoryStore()
    const store = overChannel(held)
    await store.write({ ops: [{ op: 'tenant.put', tenant: { id: 't1', name: 'one' } as never }] })
    const got = (await store.getTenant('t1'))!
    ;(got as { name: string }).name = 'changed'
    expect((await held.getTenant('t1'))?.name).toBe('one')
  })

  it("closing this side leaves the holder's store open, and fails this side's later calls as closed", async () => {
    const held = memoryStore()
    const store = overChannel(held)
    await store.close()
    await expect(store.hasTenants()).rejects.toMatchObject({ code: 'closed' })
    await expect(held.hasTenants()).resolves.toBe(false)
  })

  it('fails the calls in flight when the other side is gone, and every later call', async () => {
    const sent: StoreCall[][] = []
    const remote = storeOverThread((calls) => sent.push(calls))
    const inFlight = remote.store.getTenant('t')
    remote.fail(new StoreError('unavailable', 'its thread ended'))
    await expect(inFlight).rejects.toMatchObject({ code: 'unavailable' })
    await expect(remote.store.hasTenants()).rejects.toMatchObject({ code: 'unavailable' })
    // The call not sent yet is never sent; a reply to a call no longer waiting is ignored.
    await new Promise((r) => setImmediate(r))
    expect(sent).toEqual([])
    remote.settle([{ id: 1, result: null }])
  })

  it('sends the calls made in one turn in one message, and settles each from one message of replies', async () => {
    const sent: StoreCall[][] = []
    const remote = storeOverThread((calls) => sent.push(calls))
    const first = [remote.store.getTenant('a'), remote.store.hasTenants(), remote.store.getTenant('b')]
    await new Promise((r) => setImmediate(r))
    const later = remote.store.listTenants()
    await new Promise((r) => setImmediate(r))
    expect(sent.map((calls) => calls.map((c) => c.method))).toEqual([
      ['getTenant', 'hasTenants', 'getTenant'],
      ['listTenants'],
    ])
    const [a, any, b] = sent[0]!.map((c) => c.id)
    remote.settle([
      { id: b!, error: { message: 'gone', code: 'unavailable' } },
      { id: a!, result: { id: 'a' } },
      { id: any!, result: true },
    ])
    await expect(first[0]).resolves.toEqual({ id: 'a' })
    await expect(first[1]).resolves.toBe(true)
    await expect(first[2]).rejects.toMatchObject({ code: 'unavailable', message: 'gone' })
    remote.settle([{ id: sent[1]![0]!.id, result: [] }])
    await expect(later).resolves.toEqual([])
  })

  it('refuses a call the contract does not have, and close, on the holding side', async () => {
    const held = memoryStore()
    for (const method of ['close', 'constructor', '__proto__', 'dump2']) {
      const reply = await answerStoreCall(held, { id: 7, method: method as never, args: [] })
      expect(reply).toEqual({ id: 7, error: { message: `thread store: no such call: ${method}` } })
    }
    await expect(held.hasTenants()).resolves.toBe(false)
  })
})
