import { afterEach, describe, expect, it, vi } from 'vitest'
import {
  abortReason,
  allowedUrl,
  checkEgressRequest,
  type EgressAnswer,
  EgressError,
  type EgressLimits,
  type EgressRequest,
  egressVia,
  parseEgressOrigins,
} from '../../src/reactors/egress.js'

/**
 * The egress policy of `src/reactors/egress.ts` on its own, around a scripted exchange (no network):
 * the allow-list by origin, the request checks (method, headers, body), redirects (to listed origins
 * only, at most 5, bodies and credentials dropped as the promise says) and the time bound, which the
 * tests drive with fake timers.
 */

const limits: EgressLimits = { timeoutMs: 1000, maxRequestBytes: 10, maxResponseBytes: 100 }

const get = (url: string, more: Partial<EgressRequest> = {}): EgressRequest => ({
  url,
  method: 'GET',
  headers: {},
  ...more,
})

const refusal = (run: () => unknown): string => {
  try {
    run()
  } catch (error) {
    expect(error).toBeInstanceOf(EgressError)
    return (error as Error).message
  }
  throw new Error('not refused')
}

const typeRefusal = (list: unknown): string => {
  try {
    parseEgressOrigins(list as string[])
  } catch (error) {
    expect(error).toBeInstanceOf(TypeError)
    return (error as Error).message
  }
  throw new Error('not refused')
}

describe('the allow-list (parseEgressOrigins, allowedUrl)', () => {
  it('is empty when not given, and normalizes each entry to its origin, once', () => {
    expect(parseEgressOrigins(undefined)).toEqual([])
    expect(parseEgressOrigins([])).toEqual([])
    expect(
      parseEgressOrigins([
        'https://API.example.com:443',
        'https://api.example.com/',
        'http://127.0.0.1:8080',
        'http://[::1]:9000/',
      ]),
    ).toEqual(['https://api.example.com', 'http://127.0.0.1:8080', 'http://[::1]:9000'])
  })

  it('refuses a list that is not an array, a non-URL, another scheme, and anything beyond the origin', () => {
    expect(typeRefusal('https://api.example.com')).toBe('egress must be a list of origins')
    expect(typeRefusal(['not a url'])).toBe('egress: "not a url" is not a URL origin')
    const origin = (entry: string) =>
      `egress: ${JSON.stringify(entry)} must be an http or https origin (scheme, host and port only)`
    for (const entry of [
      'ftp://files.example.com',
      'file:///',
      'ws://api.example.com',
      'https://api.example.com/v1',
      'https://api.example.com/?a=1',
      'https://api.example.com/#top',
      'https://user@api.example.com',
      'https://:secret@api.example.com',
    ])
      expect({ entry, message: typeRefusal([entry]) }).toEqual({ entry, message: origin(entry) })
  })

  it('answers a URL on a listed origin, parsed; anything else (credentials, unlisted, not a URL) is null', () => {
    const origins = ['https://api.example.com', 'http://127.0.0.1:8080']
    expect(allowedUrl(origins, 'https://api.example.com/a?b=1')?.href).toBe('https://api.example.com/a?b=1')
    expect(allowedUrl(origins, 'http://127.0.0.1:8080/x')?.href).toBe('http://127.0.0.1:8080/x')
    expect(allowedUrl(origins, 'https://api.example.com:8443/')).toBeNull()
    expect(allowedUrl(origins, 'http://api.example.com/')).toBeNull()
    expect(allowedUrl(origins, 'https://api.example.com.evil.test/')).toBeNull()
    expect(allowedUrl(origins, 'https://user@api.example.com/')).toBeNull()
    expect(allowedUrl(origins, 'https://:pw@api.example.com/')).toBeNull()
    expect(allowedUrl(origins, 'not a url')).toBeNull()
    expect(allowedUrl([], 'https://api.example.com/')).toBeNull()
  })
})

describe('the request checks (checkEgressRequest)', () => {
  it('takes the seven methods in any case, upper-cased; any other is refused, named (20 characters at most)', () => {
    for (const method of ['get', 'HEAD', 'Post', 'put', 'patch', 'delete', 'options'])
      expect(checkEgressRequest(get('https://a.test/', { method }), limits).method).toBe(method.toUpperCase())
    expect(refusal(() => checkEgressRequest(get('https://a.test/', { method: 'TRACE' }), limits))).toBe(
      'method "TRACE" is not allowed',
    )
    expect(
      refusal(() => checkEgressRequest(get('https://a.test/', { method: 'x'.repeat(30) }), limits)),
    ).toBe(`method "${'X'.repeat(20)}" is not allowed`)
  })

  it('answers the headers lower-cased, the url and method, and no body key when there is none', () => {
    const out = checkEgressRequest(
      get('https://a.test/p', { headers: { 'X-Trace': 'one', Authorization: 'Bearer t' } }),
      limits,
    )
    expect(out).toStrictEqual({
      url: 'https://a.test/p',
      method: 'GET',
      headers: { 'x-trace': 'one', authorization: 'Bearer t' },
    })
    expect('body' in out).toBe(false)
    const missing = checkEgressRequest({ url: 'https://a.test/', method: 'GET' } as EgressRequest, limits)
    expect(missing.headers).toStrictEqual({})
    const posted = checkEgressRequest(get('https://a.test/', { method: 'POST', body: 'hi' }), limits)
    expect(posted).toStrictEqual({ url: 'https://a.test/', method: 'POST', headers: {}, body: 'hi' })
  })

  it('takes 64 headers and refuses 65', () => {
    const headers = (count: number) =>
      Object.fromEntries(Array.from({ length: count }, (_, i) => [`x-h${i}`, 'v']))
    expect(
      Object.keys(checkEgressRequest(get('https://a.test/', { headers: headers(64) }), limits).headers),
    ).toHaveLength(64)
    expect(refusal(() => checkEgressRequest(get('https://a.test/', { headers: headers(65) }), limits))).toBe(
      'at most 64 request headers',
    )
  })

  it('takes header names made of token characters only', () => {
    const name = "x-!#$%&'*+.^_`|~09azaz"
    expect(checkEgressRequest(get('https://a.test/', { headers: { [name]: 'v' } }), limits).headers).toEqual({
      [name]: 'v',
    })
    for (const bad of ['x y', 'x:y', '', 'x\ny', 'x(y)', 'é', 'x/y'])
      expect({
        bad,
        message: refusal(() =>
          checkEgressRequest(get('https://a.test/', { headers: { [bad]: 'v' } }), limits),
        ),
      }).toEqual({
        bad,
        message: `invalid header name ${JSON.stringify(bad)}`,
      })
    const long = `${'a'.repeat(60)} b`
    expect(
      refusal(() => checkEgressRequest(get('https://a.test/', { headers: { [long]: 'v' } }), limits)),
    ).toBe(`invalid header name "${'a'.repeat(50)}"`)
  })

  it('refuses a header value with CR, LF or NUL', () => {
    for (const value of ['a\rb', 'a\nb', 'a\0b'])
      expect(
        refusal(() => checkEgressRequest(get('https://a.test/', { headers: { 'X-Y': value } }), limits)),
      ).toBe('invalid value for header x-y')
    expect(
      checkEgressRequest(get('https://a.test/', { headers: { 'x-y': 'a\tb c' } }), limits).headers,
    ).toEqual({
      'x-y': 'a\tb c',
    })
  })

  it('refuses the headers the host sets itself, and any proxy- header', () => {
    for (const name of [
      'Host',
      'connection',
      'content-length',
      'transfer-encoding',
      'keep-alive',
      'upgrade',
      'te',
      'trailer',
      'expect',
      'proxy-authorization',
      'proxy-connection',
      'proxy-anything',
    ])
      expect(
        refusal(() => checkEgressRequest(get('https://a.test/', { headers: { [name]: 'v' } }), limits)),
      ).toBe(`header ${name.toLowerCase()} is set by the host`)
    const kept = { 'x-proxy-id': 'a', 'x-host': 'b', 'content-type': 'c', 'x-te': 'd' }
    expect(checkEgressRequest(get('https://a.test/', { headers: kept }), limits).headers).toEqual(kept)
  })

  it('takes headers of 32768 bytes (names and values) and refuses one more', () => {
    const at = (valueBytes: number) => get('https://a.test/', { headers: { a: 'v'.repeat(valueBytes) } })
    expect(checkEgressRequest(at(32767), limits).headers['a']).toHaveLength(32767)
    expect(refusal(() => checkEgressRequest(at(32768), limits))).toBe(
      'request headers are larger than 32768 bytes',
    )
    const two = get('https://a.test/', { headers: { ab: 'v'.repeat(16382), cd: 'w'.repeat(16382) } })
    expect(Object.keys(checkEgressRequest(two, limits).headers)).toEqual(['ab', 'cd'])
    const twoOver = get('https://a.test/', { headers: { ab: 'v'.repeat(16382), cd: 'w'.repeat(16383) } })
    expect(refusal(() => checkEgressRequest(twoOver, limits))).toBe(
      'request headers are larger than 32768 bytes',
    )
  })

  it('takes a body of maxRequestBytes UTF-8 bytes, text or bytes, and refuses one more', () => {
    const post = (body: string | Uint8Array) => get('https://a.test/', { method: 'POST', body })
    expect(checkEgressRequest(post('é'.repeat(5)), limits).body).toBe('ééééé')
    expect(refusal(() => checkEgressRequest(post('é'.repeat(5) + 'x'), limits))).toBe(
      'request body is larger than 10 bytes',
    )
    expect(checkEgressRequest(post(new Uint8Array(10)), limits).body).toHaveLength(10)
    expect(refusal(() => checkEgressRequest(post(new Uint8Array(11)), limits))).toBe(
      'request body is larger than 10 bytes',
    )
  })

  it('refuses a body on GET and HEAD, even an empty one; other methods carry one', () => {
    expect(refusal(() => checkEgressRequest(get('https://a.test/', { body: '' }), limits))).toBe(
      'a GET request has no body',
    )
    expect(
      refusal(() => checkEgressRequest(get('https://a.test/', { method: 'head', body: 'x' }), limits)),
    ).toBe('a HEAD request has no body')
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])
      expect(checkEgressRequest(get('https://a.test/', { method, body: 'x' }), limits).body).toBe('x')
  })
})

interface Call {
  url: string
  request: EgressRequest
  limits: EgressLimits
  signal: AbortSignal
}

/** A client around a scripted exchange: each hop answers the next of `answers`. */
function scripted(answers: Partial<EgressAnswer>[]) {
  const calls: Call[] = []
  const client = egressVia(async (url, request, given, signal) => {
    calls.push({ url: url.href, request, limits: given, signal })
    const answer = answers[calls.length - 1]
    if (!answer) throw new Error('no more answers')
    return { status: 200, statusText: '', headers: {}, body: '', ...answer }
  })
  return { client, calls }
}

const redirectTo = (location: string, status = 302): Partial<EgressAnswer> => ({
  status,
  headers: { location },
})

const A = 'https://a.test'
const B = 'https://b.test'

async function rejection(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(EgressError)
  return (error as Error).message
}

describe('an exchange under the policy (egressVia)', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it('makes a listed request once, checked, and answers it with its URL, not redirected', async () => {
    const { client, calls } = scripted([
      { status: 201, statusText: 'Created', body: 'ok', headers: { a: 'b' } },
    ])
    const answer = await client(
      [A],
      get(`${A}/x`, { method: 'post', body: 'hi', headers: { 'X-A': '1' } }),
      limits,
    )
    expect(answer).toStrictEqual({
      status: 201,
      statusText: 'Created',
      headers: { a: 'b' },
      body: 'ok',
      url: `${A}/x`,
      redirected: false,
    })
    expect(calls).toHaveLength(1)
    expect(calls[0]!.url).toBe(`${A}/x`)
    expect(calls[0]!.request).toStrictEqual({
      url: `${A}/x`,
      method: 'POST',
      headers: { 'x-a': '1' },
      body: 'hi',
    })
    expect(calls[0]!.limits).toBe(limits)
  })

  it('refuses an unlisted origin or a request that fails its checks before any exchange', async () => {
    const { client, calls } = scripted([{}])
    expect(await rejection(client([A], get(`${B}/x`), limits))).toBe(`${B} is not on the egress allow-list`)
    expect(await rejection(client([A], get('nonsense'), limits))).toBe(
      'an invalid URL is not on the egress allow-list',
    )
    expect(await rejection(client([], get(`${A}/`), limits))).toBe(`${A} is not on the egress allow-list`)
    expect(await rejection(client([A], get(`${A}/`, { method: 'TRACE' }), limits))).toBe(
      'method "TRACE" is not allowed',
    )
    expect(calls).toHaveLength(0)
  })

  it('follows a 3xx with a location to a listed origin (not 304, not 2xx or 4xx), relative ones too', async () => {
    for (const status of [300, 301, 302, 303, 307, 308, 399]) {
      const { client, calls } = scripted([redirectTo(`${B}/next`, status), { body: 'there' }])
      const answer = await client([A, B], get(`${A}/`), limits)
      expect({ status, answer: [answer.url, answer.redirected, answer.body] }).toEqual({
        status,
        answer: [`${B}/next`, true, 'there'],
      })
      expect(calls.map((call) => call.url)).toEqual([`${A}/`, `${B}/next`])
    }
    for (const status of [200, 299, 304, 400, 404]) {
      const { client, calls } = scripted([redirectTo(`${B}/next`, status)])
      const answer = await client([A, B], get(`${A}/`), limits)
      expect({ status, answer: [answer.status, answer.url, answer.redirected] }).toEqual({
        status,
        answer: [status, `${A}/`, false],
      })
      expect(calls).toHaveLength(1)
    }
    const relative = scripted([redirectTo('../b/c?d=1'), {}])
    expect((await relative.client([A], get(`${A}/x/y/z`), limits)).url).toBe(`${A}/x/b/c?d=1`)
    const bare = scripted([{ status: 302, headers: {} }])
    expect(await bare.client([A], get(`${A}/`), limits)).toMatchObject({ status: 302, redirected: false })
    expect(bare.calls).toHaveLength(1)
  })

  it("answers a redirect as it is when followRedirects is false (the proxy's way); follows it when true", async () => {
    const off = scripted([redirectTo(`${A}/next`)])
    const answer = await off.client([A], get(`${A}/`), { ...limits, followRedirects: false })
    expect([answer.status, answer.url, answer.redirected, answer.headers['location']]).toEqual([
      302,
      `${A}/`,
      false,
      `${A}/next`,
    ])
    expect(off.calls).toHaveLength(1)
    const on = scripted([redirectTo(`${A}/next`), {}])
    expect((await on.client([A], get(`${A}/`), { ...limits, followRedirects: true })).redirected).toBe(true)
  })

  it('refuses a redirect to an unlisted origin or an invalid URL, before any exchange with it', async () => {
    const off = scripted([redirectTo(`${B}/x`), {}])
    expect(await rejection(off.client([A], get(`${A}/`), limits))).toBe(
      `redirect to ${B} refused: not on the egress allow-list`,
    )
    expect(off.calls).toHaveLength(1)
    const invalid = scripted([redirectTo('http://[oops'), {}])
    expect(await rejection(invalid.client([A], get(`${A}/`), limits))).toBe('a redirect to an invalid URL')
    expect(invalid.calls).toHaveLength(1)
  })

  it('follows 5 redirects and refuses a sixth', async () => {
    const hops = (count: number) => [
      ...Array.from({ length: count }, (_, i) => redirectTo(`${A}/${i + 1}`)),
      { body: 'end' },
    ]
    const five = scripted(hops(5))
    const answer = await five.client([A], get(`${A}/0`), limits)
    expect([answer.body, answer.url, answer.redirected]).toEqual(['end', `${A}/5`, true])
    expect(five.calls).toHaveLength(6)
    const six = scripted(hops(6))
    expect(await rejection(six.client([A], get(`${A}/0`), limits))).toBe('more than 5 redirects')
    expect(six.calls).toHaveLength(6)
  })

  it('turns a POST into a GET without body or content headers on 301, 302 and 303; keeps it on 307 and 308', async () => {
    const headers = {
      'content-type': 'text/plain',
      'content-encoding': 'gzip',
      'content-language': 'en',
      'content-location': '/x',
      'x-keep': 'yes',
    }
    for (const status of [301, 302, 303]) {
      const { client, calls } = scripted([redirectTo(`${A}/next`, status), {}])
      await client([A], get(`${A}/`, { method: 'POST', body: 'data', headers }), limits)
      expect({ status, second: calls[1]!.request }).toStrictEqual({
        status,
        second: { url: `${A}/next`, method: 'GET', headers: { 'x-keep': 'yes' } },
      })
    }
    for (const status of [307, 308]) {
      const { client, calls } = scripted([redirectTo(`${A}/next`, status), {}])
      await client([A], get(`${A}/`, { method: 'POST', body: 'data', headers }), limits)
      expect({ status, second: calls[1]!.request }).toStrictEqual({
        status,
        second: { url: `${A}/next`, method: 'POST', headers, body: 'data' },
      })
    }
  })

  it('keeps a PUT on 301 and 302, turns it into a GET on 303; a HEAD stays a HEAD', async () => {
    for (const status of [301, 302]) {
      const { client, calls } = scripted([redirectTo(`${A}/next`, status), {}])
      await client(
        [A],
        get(`${A}/`, { method: 'PUT', body: 'data', headers: { 'content-type': 'a/b' } }),
        limits,
      )
      expect({ status, second: calls[1]!.request }).toStrictEqual({
        status,
        second: { url: `${A}/next`, method: 'PUT', headers: { 'content-type': 'a/b' }, body: 'data' },
      })
    }
    const see = scripted([redirectTo(`${A}/next`, 303), {}])
    await see.client(
      [A],
      get(`${A}/`, { method: 'PUT', body: 'data', headers: { 'content-type': 'a/b' } }),
      limits,
    )
    expect(see.calls[1]!.request).toStrictEqual({ url: `${A}/next`, method: 'GET', headers: {} })
    const head = scripted([redirectTo(`${A}/next`, 303), {}])
    await head.client([A], get(`${A}/`, { method: 'HEAD' }), limits)
    expect(head.calls[1]!.request.method).toBe('HEAD')
  })

  it('drops Authorization and Cookie on a redirect to another origin only', async () => {
    const headers = { authorization: 'Bearer s', cookie: 'c=1', 'x-keep': 'k' }
    for (const status of [302, 303, 307]) {
      const across = scripted([redirectTo(`${B}/next`, status), {}])
      await across.client([A, B], get(`${A}/`, { headers }), limits)
      expect({ status, headers: across.calls[1]!.request.headers }).toStrictEqual({
        status,
        headers: { 'x-keep': 'k' },
      })
      const same = scripted([redirectTo(`${A}/next`, status), {}])
      await same.client([A, B], get(`${A}/`, { headers }), limits)
      expect({ status, headers: same.calls[1]!.request.headers }).toStrictEqual({ status, headers })
    }
  })

  it("stops before an exchange once the caller's signal aborted, with its EgressError or as 'aborted'", async () => {
    const plain = new AbortController()
    plain.abort(new Error('gone'))
    const first = scripted([{}])
    expect(await rejection(first.client([A], get(`${A}/`), { ...limits, signal: plain.signal }))).toBe(
      'aborted',
    )
    expect(first.calls).toHaveLength(0)
    const reasoned = new AbortController()
    reasoned.abort(new EgressError('the run ended'))
    expect(await rejection(first.client([A], get(`${A}/`), { ...limits, signal: reasoned.signal }))).toBe(
      'the run ended',
    )
    // Aborted while the first hop answered a redirect: the second hop is not made.
    const during = new AbortController()
    const calls: string[] = []
    const client = egressVia(async (url) => {
      calls.push(url.href)
      during.abort()
      return { status: 302, statusText: '', headers: { location: `${A}/next` }, body: '' }
    })
    expect(await rejection(client([A], get(`${A}/`), { ...limits, signal: during.signal }))).toBe('aborted')
    expect(calls).toEqual([`${A}/`])
  })

  it("hands the exchange a signal that aborts with the caller's", async () => {
    const caller = new AbortController()
    const { client, calls } = scripted([{}])
    await client([A], get(`${A}/`), { ...limits, signal: caller.signal })
    expect(calls[0]!.signal.aborted).toBe(false)
    caller.abort(new EgressError('stop'))
    expect(calls[0]!.signal.aborted).toBe(true)
    expect(abortReason(calls[0]!.signal).message).toBe('stop')
  })

  it('aborts the exchange at timeoutMs (not before), saying so; the time is not counted after the answer', async () => {
    vi.useFakeTimers()
    let seen: AbortSignal | undefined
    const waiting = egressVia(
      (_url, _request, _limits, signal) =>
        new Promise((_, reject) => {
          seen = signal
          signal.addEventListener('abort', () => reject(abortReason(signal)))
        }),
    )
    const pending = rejection(waiting([A], get(`${A}/`), { ...limits, timeoutMs: 1500.4 }))
    await vi.advanceTimersByTimeAsync(1499)
    expect(seen?.aborted).toBe(false)
    await vi.advanceTimersByTimeAsync(2)
    expect(await pending).toBe('no answer within 1500 ms')

    const negative = rejection(waiting([A], get(`${A}/`), { ...limits, timeoutMs: -5 }))
    await vi.advanceTimersByTimeAsync(0)
    expect(await negative).toBe('no answer within -5 ms')

    const { client, calls } = scripted([{}])
    await client([A], get(`${A}/`), limits)
    await vi.advanceTimersByTimeAsync(5000)
    expect(calls[0]!.signal.aborted).toBe(false)
  })

  it("abortReason: the signal's EgressError, or 'aborted' for any other reason", () => {
    const a = new AbortController()
    a.abort(new EgressError('why'))
    expect(abortReason(a.signal).message).toBe('why')
    const b = new AbortController()
    b.abort('text')
    expect(abortReason(b.signal)).toBeInstanceOf(EgressError)
    expect(abortReason(b.signal).message).toBe('aborted')
  })
})
