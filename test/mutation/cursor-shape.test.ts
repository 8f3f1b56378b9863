/**
 * A v2 cursor is refused from its text alone when it can't be one this API answered, before any
 * work on it: no key is derived (the tenant's keyed hash) for a cursor of more than 2000 characters,
 * one with a character outside base64url, one not in canonical base64url, or one of fewer than 28
 * bytes (a 12-byte IV and a 16-byte tag around the position). What opens is a position `cursorFor`
 * sealed of at most 800 UTF-16 units (a token id is at most 200). Each at its boundary, through the
 * two functions of `src/call/pagination.ts` with a context whose keyed hash counts its calls.
 */
import { createHmac } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import type { Ctx } from '../../src/call/context.js'
import { cursorFor, positionFromCursor } from '../../src/call/pagination.js'
import { ServiceError } from '../../src/kernel/errors.js'

function countingCtx() {
  const ctx = {
    derived: 0,
    async hmac(purpose: string, value: string) {
      ctx.derived++
      return createHmac('sha256', 'tenant-key').update(`${purpose}\u0000${value}`).digest('base64url')
    },
  }
  return ctx
}

/** What opening `cursor` answers: the position, or the refusal's field and message. */
async function open(ctx: ReturnType<typeof countingCtx>, cursor: string) {
  try {
    return await positionFromCursor(ctx as unknown as Ctx, 'scope', cursor)
  } catch (error) {
    if (!(error instanceof ServiceError)) throw error
    return error.issues
  }
}

const refusal = { start: ['is not a cursor this API answered for this query'] }
const base64url = (bytes: number) => Buffer.alloc(bytes, 7).toString('base64url')

describe('a cursor is refused from its text before its key is derived', () => {
  it('2000 characters of base64url get as far as the key; 2002 (the next canonical length) are refused before it', async () => {
    // 1500 bytes are 2000 characters of canonical base64url, 1501 bytes are 2002.
    expect([base64url(1500).length, base64url(1501).length]).toEqual([2000, 2002])
    const at = countingCtx()
    expect(await open(at, base64url(1500))).toEqual(refusal)
    expect(at.derived).toBe(1)
    const past = countingCtx()
    expect(await open(past, base64url(1501))).toEqual(refusal)
    expect(past.derived).toBe(0)
  })

  it('28 bytes get as far as the key; 27 are refused before it', async () => {
    const at = countingCtx()
    expect(await open(at, base64url(28))).toEqual(refusal)
    expect(at.derived).toBe(1)
    const short = countingCtx()
    expect(await open(short, base64url(27))).toEqual(refusal)
    expect(short.derived).toBe(0)
  })

  it('a character outside base64url anywhere, or base64url not in its canonical form, is refused before the key', async () => {
    const sealed = await cursorFor(countingCtx() as unknown as Ctx, 'scope', 'token-id')
    const changed = [
      `!${sealed}`,
      `${sealed}!`,
      `${sealed.slice(0, 10)}=${sealed.slice(10)}`,
      `${sealed}=`,
      ` ${sealed}`,
    ]
    for (const cursor of changed) {
      const ctx = countingCtx()
      expect(await open(ctx, cursor), cursor).toEqual(refusal)
      expect(ctx.derived, cursor).toBe(0)
    }
    expect(await open(countingCtx(), sealed)).toBe('token-id')
  })
})

describe('what a cursor opens to', () => {
  it('a sealed position of 800 UTF-16 units opens; one of 801 is refused', async () => {
    const ctx = countingCtx() as unknown as Ctx
    const longest = 'p'.repeat(800)
    expect(await positionFromCursor(ctx, 'scope', await cursorFor(ctx, 'scope', longest))).toBe(longest)
    const over = await cursorFor(ctx, 'scope', 'p'.repeat(801))
    expect(await open(countingCtx(), over)).toEqual(refusal)
  })

  it('opens only under the scope it was sealed for', async () => {
    const ctx = countingCtx() as unknown as Ctx
    const sealed = await cursorFor(ctx, 'other scope', 'token-id')
    expect(await open(countingCtx(), sealed)).toEqual(refusal)
  })
})
