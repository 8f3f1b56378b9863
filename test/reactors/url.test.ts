import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sandboxRunner } from '../../adapters/sandbox/index.js'

/**
 * A formula's `URL` against Node's on hosts: the same answer, or — for international domain names
 * only, which formulas write in their `xn--` form — a clear refusal, never a different answer.
 */
const runner = sandboxRunner({ poolSize: 1 })
afterAll(() => runner.close())
// The worker's first start (compiling the engine) happens here, with time a busy machine needs, so
// no test's own limit pays for it.
beforeAll(async () => {
  const warm = await runner.run(
    'module.exports = async () => 1',
    { args: {}, configuration: {} },
    { timeoutMs: 120_000 },
  )
  if (!warm.ok) throw new Error(warm.message)
}, 180_000)

const INPUTS = [
  'https://example.com/a/b?c=d#e',
  'HTTPS://EXAMPLE.COM:443/',
  'http://example.com:8080/path',
  'http://user:pa ss@example.com/',
  'http://127.0.0.1/',
  'http://127.1/',
  'http://0x7f.1/',
  'http://0x7f.0.0.1/',
  'http://017700000001/',
  'http://2130706433/',
  'http://0/',
  'http://1.2.3.4./',
  'http://256.0.0.1/',
  'http://1.2.3.4.5/',
  'http://4294967296/',
  'http://0x100000000/',
  'http://1.2.3.09/',
  'http://foo.0x/',
  'http://[::1]/',
  'http://[0:0:0:0:0:0:0:1]:8080/',
  'http://[2001:DB8:0:0:1:0:0:1]/',
  'http://[2001:db8::0:1]/',
  'http://[1:0:0:2:0:0:0:3]/',
  'http://[::ffff:192.168.1.1]/',
  'http://[::ffff:1.2.3]/',
  'http://[1:2:3:4:5:6:7:8:9]/',
  'http://[1::2::3]/',
  'http://[::]/',
  'http://[fe80::1%25eth0]/',
  'http://ex%41mple.com/',
  'http://exa mple.com/',
  'http://xn--nxasmq6b.com/',
  'http://example.com./',
  'http://a..b/',
  'https://api.example.com:65535/',
  'https://api.example.com:65536/',
  'foo://[::1]/x',
]
/** International domain names: refused, as documented. */
const IDN = ['http://bücher.de/', 'https://ÉXAMPLE.com/', 'http://例え.テスト/']

type Answer =
  | { href: string; host: string; hostname: string; port: string; origin: string }
  | { error: string }

const parse = (u: string): Answer => {
  try {
    const url = new URL(u)
    return { href: url.href, host: url.host, hostname: url.hostname, port: url.port, origin: url.origin }
  } catch {
    return { error: 'Invalid URL' }
  }
}

async function inFormula(inputs: string[]): Promise<(Answer & { message?: string })[]> {
  const outcome = await runner.run(
    `module.exports = async (req) => req.args.inputs.map((u) => {
      try {
        const url = new URL(u)
        return { href: url.href, host: url.host, hostname: url.hostname, port: url.port, origin: url.origin }
      } catch (e) { return { error: 'Invalid URL', message: e.message } }
    })`,
    { args: { inputs }, configuration: {} },
    { timeoutMs: 60_000 },
  )
  if (!outcome.ok) throw new Error(outcome.message)
  return outcome.value as (Answer & { message?: string })[]
}

describe("a formula's URL agrees with Node's on hosts", () => {
  it('answers every row of the table as Node does', async () => {
    const got = await inFormula(INPUTS)
    const rows = INPUTS.map((u, i) => {
      const { message: _, ...answer } = got[i]!
      return { u, answer }
    })
    expect(rows).toEqual(INPUTS.map((u) => ({ u, answer: parse(u) })))
  }, 120_000)

  it('refuses international domain names clearly instead of answering differently', async () => {
    const got = await inFormula(IDN)
    for (const [i, u] of IDN.entries()) {
      expect(parse(u)).not.toHaveProperty('error')
      expect(got[i]).toEqual({
        error: 'Invalid URL',
        message: expect.stringContaining('international domain names'),
      })
    }
  }, 120_000)
})
