import { describe, expect, it } from 'vitest'
import { isJsonMediaType, readJsonBody, requireMediaType } from '../../adapters/http/body.js'
import { type Incoming, TOO_LARGE, UNREADABLE } from '../../adapters/http/exchange.js'
import { HttpProblem } from '../../adapters/http/problem.js'

/**
 * `adapters/http/body.ts` on its own, with a scripted request: what each refusal says and sends,
 * and which requests are refused before their body is read.
 */
type Body = Uint8Array | null | typeof TOO_LARGE | typeof UNREADABLE

function incoming(headers: Record<string, string>, body: Body) {
  const reads: number[] = []
  const request: Incoming = {
    method: 'POST',
    target: '/tokens',
    header: (name) => headers[name] ?? null,
    readBody: async (maxBytes) => {
      reads.push(maxBytes)
      return body
    },
  }
  return { request, reads }
}

const bytes = (text: string) => new TextEncoder().encode(text)

async function problem(promise: Promise<unknown>): Promise<HttpProblem> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(HttpProblem)
  return error as HttpProblem
}

describe('JSON media types', () => {
  it('names JSON by type and subtype, case and spaces ignored, parameters dropped', () => {
    expect(isJsonMediaType('application/json')).toBe(true)
    expect(isJsonMediaType('APPLICATION/JSON')).toBe(true)
    expect(isJsonMediaType('  Application/Json  ')).toBe(true)
    expect(isJsonMediaType('application/json ; charset=utf-8')).toBe(true)
    expect(isJsonMediaType('application/merge-patch+json')).toBe(true)
    expect(isJsonMediaType('application/vnd.api+JSON; x=1')).toBe(true)
    expect(isJsonMediaType('text/x+json')).toBe(false)
    expect(isJsonMediaType('text/json')).toBe(false)
    expect(isJsonMediaType('application/jsonx')).toBe(false)
    expect(isJsonMediaType(null)).toBe(false)
  })

  it('a required media type is met with parameters and any case, and refused with 415 naming it', () => {
    expect(() =>
      requireMediaType('application/merge-patch+json', 'application/merge-patch+json'),
    ).not.toThrow()
    expect(() =>
      requireMediaType('Application/Merge-Patch+JSON; charset=utf-8', 'application/merge-patch+json'),
    ).not.toThrow()
    for (const declared of [null, 'application/json', 'text/plain']) {
      let thrown: unknown
      try {
        requireMediaType(declared, 'application/merge-patch+json')
      } catch (error) {
        thrown = error
      }
      expect(thrown).toBeInstanceOf(HttpProblem)
      expect((thrown as HttpProblem).status).toBe(415)
      expect((thrown as HttpProblem).message).toBe(
        'The request body must be declared as Content-Type application/merge-patch+json.',
      )
    }
  })
})

describe('readJsonBody', () => {
  it('a declared length over the limit answers 413 with connection: close, without reading', async () => {
    const { request, reads } = incoming(
      { 'content-length': '11', 'content-type': 'application/json' },
      bytes('{}'),
    )
    const refused = await problem(readJsonBody(request, 10))
    expect(refused.status).toBe(413)
    expect(refused.message).toBe('The request body is larger than 10 bytes.')
    expect(refused.headers).toEqual({ connection: 'close' })
    expect(reads).toEqual([])
  })

  it('a declared length of exactly the limit is read', async () => {
    const { request, reads } = incoming(
      { 'content-length': '10', 'content-type': 'application/json' },
      bytes('"12345678"'),
    )
    expect(await readJsonBody(request, 10)).toBe('12345678')
    expect(reads).toEqual([10])
  })

  it('a body found too large while reading answers the same 413', async () => {
    const { request } = incoming({ 'content-type': 'application/json' }, TOO_LARGE)
    const refused = await problem(readJsonBody(request, 10))
    expect(refused.status).toBe(413)
    expect(refused.message).toBe('The request body is larger than 10 bytes.')
    expect(refused.headers).toEqual({ connection: 'close' })
  })

  it('a declared body that is not JSON answers 415 before it is read', async () => {
    const { request, reads } = incoming(
      { 'content-length': '5', 'content-type': 'text/plain' },
      bytes('hello'),
    )
    const refused = await problem(readJsonBody(request, 10))
    expect(refused.status).toBe(415)
    expect(refused.message).toBe(
      'The request body must be JSON: Content-Type application/json or application/*+json.',
    )
    expect(reads).toEqual([])
  })

  it('a body not declared JSON and sent without a length answers 415 once read', async () => {
    const { request, reads } = incoming({ 'content-type': 'text/plain' }, bytes('hello'))
    expect((await problem(readJsonBody(request, 10))).status).toBe(415)
    expect(reads).toEqual([10])
  })

  it('no body, an empty body or Content-Length: 0 is no body, whatever the content type', async () => {
    expect(
      await readJsonBody(incoming({ 'content-length': '0', 'content-type': 'text/plain' }, null).request, 10),
    ).toBe(undefined)
    expect(await readJsonBody(incoming({ 'content-type': 'text/plain' }, null).request, 10)).toBe(undefined)
    expect(
      await readJsonBody(incoming({ 'content-type': 'application/json' }, new Uint8Array()).request, 10),
    ).toBe(undefined)
    expect(await readJsonBody(incoming({ 'content-type': 'text/plain' }, new Uint8Array()).request, 10)).toBe(
      undefined,
    )
  })

  it('an unreadable body answers 400', async () => {
    const refused = await problem(
      readJsonBody(incoming({ 'content-type': 'application/json' }, UNREADABLE).request, 10),
    )
    expect(refused.status).toBe(400)
    expect(refused.message).toBe('The request body could not be read.')
  })

  it('invalid UTF-8 and invalid JSON answer 400, each saying which', async () => {
    const utf8 = await problem(
      readJsonBody(
        incoming({ 'content-type': 'application/json' }, new Uint8Array([0x22, 0xff, 0x22])).request,
        10,
      ),
    )
    expect(utf8.status).toBe(400)
    expect(utf8.message).toBe('The request body is not valid UTF-8.')
    expect(utf8.errors).toEqual({ body: ['is not valid UTF-8'] })
    const json = await problem(
      readJsonBody(incoming({ 'content-type': 'application/json' }, bytes('{x')).request, 10),
    )
    expect(json.status).toBe(400)
    expect(json.message).toBe('The request body is not valid JSON.')
    expect(json.errors).toEqual({ body: ['is not valid JSON'] })
  })
})
