/**
 * A file store opened with `commitsOn` hands its writes to another store of the same directory,
 * which commits them (as the heavy lane's thread hands its writes to the main thread's store): one
 * writer for the process. Each write crosses as `postMessage` would carry it: its token records
 * moved, never copied, and no large value as a string.
 */
import { randomBytes } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import { type ForwardedWrite, forwardedResult } from '../../adapters/file/forward.js'
import { type FileStore, fileStore } from '../../adapters/file/index.js'
import { isStoreError } from '../../src/store/index.js'
import { put, T } from './fixtures.js'
import { tempDir } from './helpers.js'

const opened: FileStore[] = []
afterEach(async () => {
  for (const s of opened.splice(0).reverse()) await s.close().catch(() => {})
})

/** A committing store and a store forwarding to it, with every write as it crossed and what the sender kept of it. */
async function pair() {
  const path = await tempDir()
  const committer = await fileStore({ path })
  const crossed: { write: ForwardedWrite; sent: ForwardedWrite; transfer: ArrayBuffer[] }[] = []
  const forwarding = await fileStore({
    path,
    commitsOn: async (sent, transfer) => {
      const write = structuredClone(sent, { transfer })
      crossed.push({ write, sent, transfer })
      return structuredClone(await forwardedResult(committer.commitForwarded(write)))
    },
  })
  opened.push(committer, forwarding)
  return { committer, forwarding, crossed }
}

describe('a file store whose writes another store commits', () => {
  it('commits nothing itself: the other store commits, and its reads see each write once answered', async () => {
    const { committer, forwarding, crossed } = await pair()
    const sealed = randomBytes(300_000).toString('base64')
    expect(
      await forwarding.write({ ops: [put('big', { data: { $sealed: sealed } }), put('small')] }),
    ).toEqual({
      ok: true,
    })
    expect(forwarding.stats().commits).toBe(0)
    expect(committer.stats().commits).toBe(1)
    const read = (await forwarding.getToken(T, 'big'))!
    expect(Buffer.from((read.data as unknown as { $sealed: Uint8Array }).$sealed).toString('base64')).toBe(
      sealed,
    )
    expect((await committer.getToken(T, 'small'))?.id).toBe('small')
    expect(crossed).toHaveLength(1)
  })

  it('sends each token as its record, moved: no value in the ops, the sender keeps no copy', async () => {
    const { forwarding, crossed } = await pair()
    const sealed = randomBytes(300_000).toString('base64')
    await forwarding.write({ ops: [put('big', { data: { $sealed: sealed } })] })
    const [{ write, sent, transfer }] = crossed as [(typeof crossed)[0]]
    expect(JSON.stringify(write.ops).length).toBeLessThan(2_000)
    expect((write.ops[0] as { token: { data: unknown } }).token.data).toBeNull()
    expect(write.records?.[0]?.byteLength).toBeGreaterThan(300_000 * 0.74)
    // Moved: the sender's buffer is detached, the receiver's is the only one.
    expect(transfer).toHaveLength(1)
    expect(sent.records?.[0]?.byteLength).toBe(0)
  })

  it("answers a failed guard as the committer found it, and the committer's errors with their kind", async () => {
    const { committer, forwarding } = await pair()
    await forwarding.write({ ops: [put('a')] })
    const absent = { check: 'token.absent', tenant_id: T, id: 'a' } as const
    expect(await forwarding.write({ checks: [absent], ops: [put('a')] })).toEqual({
      ok: false,
      failed: absent,
    })
    await committer.close()
    const error = await forwarding.write({ ops: [put('b')] }).catch((e: unknown) => e)
    expect(isStoreError(error, 'closed')).toBe(true)
  })
})
