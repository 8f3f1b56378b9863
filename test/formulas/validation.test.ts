import { afterAll, describe, expect, it } from 'vitest'
import { type ReactorFormulaInput, unchecked } from '../../entry/index.js'
import { failure, formulaBody, sharedRunner, world } from './setup.js'

const runner = sharedRunner()
afterAll(() => runner.close())
const PNG =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=='
type Element = ReactorFormulaInput['request_parameters'][number]
const elements = <T>(n: number, make: (i: number) => T) => Array.from({ length: n }, (_, i) => make(i))
const config = (name: string, extra: Partial<Element> = {}) => ({ name, type: 'string' as const, ...extra })
const param = (name: string, extra: Partial<Element> = {}) => ({ name, type: 'string' as const, ...extra })

/** Each case: a change to a valid body, and the field the answer must name. */
const invalid: [string, Record<string, unknown>, string][] = [
  ['name missing', { name: undefined }, 'name'],
  ['name empty', { name: '   ' }, 'name'],
  ['name too long', { name: 'n'.repeat(201) }, 'name'],
  ['name not a string', { name: 5 }, 'name'],
  ['description too long', { description: 'd'.repeat(1001) }, 'description'],
  ['type unknown', { type: 'public' }, 'type'],
  ['type official from a tenant', { type: 'official' }, 'type'],
  ['status sent', { status: 'verified' }, 'status'],
  ['id sent', { id: 'f1' }, 'id'],
  ['icon of another image type', { icon: PNG.replace('png', 'gif') }, 'icon'],
  ['icon not a data URL', { icon: 'https://example.com/a.png' }, 'icon'],
  ['icon with a bad alphabet', { icon: 'data:image/png;base64,ab$c' }, 'icon'],
  ['icon with bad padding', { icon: 'data:image/png;base64,abc' }, 'icon'],
  ['icon with stray bits', { icon: 'data:image/png;base64,QR==' }, 'icon'],
  ['icon empty', { icon: 'data:image/png;base64,' }, 'icon'],
  ['code missing', { code: undefined }, 'code'],
  ['code empty', { code: '' }, 'code'],
  ['code too long', { code: `//${'x'.repeat(11_999)}` }, 'code'],
  ['code that does not compile', { code: 'module.exports = async function (req) {' }, 'code'],
  ['code closing the module wrapper', { code: '}); (function () {' }, 'code'],
  ['configuration missing', { configuration: undefined }, 'configuration'],
  ['configuration not an array', { configuration: {} }, 'configuration'],
  ['26 configuration elements', { configuration: elements(26, (i) => config(`c${i}`)) }, 'configuration'],
  ['configuration name with a dot', { configuration: [config('a.b')] }, 'configuration.0.name'],
  ['configuration name with a space', { configuration: [config('a b')] }, 'configuration.0.name'],
  ['configuration name reserved', { configuration: [config('constructor')] }, 'configuration.0.name'],
  ['configuration type unknown', { configuration: [{ name: 'a', type: 'object' }] }, 'configuration.0.type'],
  [
    'configuration element extra key',
    { configuration: [config('a', { optional: true })] },
    'configuration.0.optional',
  ],
  [
    'configuration duplicate',
    { configuration: [config('a'), config('b'), config('a')] },
    'configuration.2.name',
  ],
  ['request_parameters missing', { request_parameters: undefined }, 'request_parameters'],
  [
    '26 request parameters',
    { request_parameters: elements(26, (i) => param(`p${i}`)) },
    'request_parameters',
  ],
  ['parameter starting with -', { request_parameters: [param('-a')] }, 'request_parameters.0.name'],
  ['parameter ending with .', { request_parameters: [param('a.')] }, 'request_parameters.0.name'],
  ['parameter with an empty segment', { request_parameters: [param('a..b')] }, 'request_parameters.0.name'],
  [
    'parameter with a reserved segment',
    { request_parameters: [param('a.__proto__.b')] },
    'request_parameters.0.name',
  ],
  [
    'parameter optional not a boolean',
    { request_parameters: [{ name: 'a', type: 'string', optional: 'yes' }] },
    'request_parameters.0.optional',
  ],
  [
    'parameter type unknown',
    { request_parameters: [{ name: 'a', type: 'date' }] },
    'request_parameters.0.type',
  ],
  [
    'parameter duplicate',
    { request_parameters: [param('x.y'), param('z'), param('x.y')] },
    'request_parameters.2.name',
  ],
  [
    'parameter under a value',
    { request_parameters: [param('a'), param('a.b')] },
    'request_parameters.1.name',
  ],
]

describe('reactor formula validation', () => {
  it.each(invalid)(
    '%s → validation_failed naming the field, nothing stored',
    async (_, change, field) => {
      const { a, store } = await world({ runner: runner.get() })
      const body = Object.fromEntries(
        Object.entries({ ...formulaBody(), ...change }).filter(([, value]) => value !== undefined),
      )
      const error = await failure(unchecked(a.admin).reactorFormulas.create(body))
      expect(error.code).toBe('validation_failed')
      expect(Object.keys(error.issues ?? {})).toContain(field)
      expect((await store.dump()).formulas).toEqual([])
      // The first case starts the sandbox's workers: on a busy machine that alone can take many seconds.
    },
    120_000,
  )

  it('update applies the same rules and leaves the formula as it was', async () => {
    const { a } = await world({ runner: runner.get() })
    const created = await a.admin.reactorFormulas.create(formulaBody())
    const error = await failure(
      a.admin.reactorFormulas.update(created.id, formulaBody({ configuration: [config('a'), config('a')] })),
    )
    expect(error.issues).toHaveProperty(['configuration.1.name'])
    expect(await a.admin.reactorFormulas.get(created.id)).toEqual(created)
  })

  it('accepts every limit at its edge and the three icon types', async () => {
    const { a } = await world({ runner: runner.get() })
    for (const type of ['png', 'jpg', 'jpeg']) {
      const made = await a.admin.reactorFormulas.create(
        formulaBody({
          name: 'n'.repeat(200),
          description: 'd'.repeat(1000),
          icon: PNG.replace('png', type),
          code: `module.exports = async () => ({})//${'x'.repeat(12_000 - 35)}`,
          configuration: elements(25, (i) => config(`c-${i}_x`)),
          request_parameters: [
            ...elements(22, (i) => param(`p${i}`)),
            param('a'),
            param('card.number', { type: 'number', optional: true }),
            param('x.y-z_1.w'),
          ],
        }),
      )
      expect(made.icon).toBe(PNG.replace('png', type))
      expect(made.code).toHaveLength(12_000)
      expect(made.request_parameters[23]).toEqual({ name: 'card.number', type: 'number', optional: true })
      expect(made.request_parameters[0]).toEqual({ name: 'p0', type: 'string', optional: false })
    }
  })

  it('treats null optional fields as absent', async () => {
    const { a } = await world({ runner: runner.get() })
    const made = await a.admin.reactorFormulas.create(
      formulaBody({ description: null, icon: null, configuration: [config('a', { description: null })] }),
    )
    expect(made).not.toHaveProperty('description')
    expect(made).not.toHaveProperty('icon')
    expect(made.configuration).toEqual([{ name: 'a', type: 'string' }])
  })

  it('with `runner: null`, code is not compile-checked', async () => {
    const { a } = await world({ runner: null })
    const made = await a.admin.reactorFormulas.create(formulaBody({ code: 'this is not javascript' }))
    expect(made.code).toBe('this is not javascript')
  })
})

describe('official formulas from the operator', () => {
  it('are validated the same way and must be official', async () => {
    const { service, store } = await world({ runner: runner.get() })
    const error = await failure(unchecked(service.admin).createOfficialFormula(formulaBody()))
    expect(error.issues).toHaveProperty(['type'])
    const broken = await failure(
      service.admin.createOfficialFormula(formulaBody({ type: 'official', code: 'if (' })),
    )
    expect(broken.issues).toHaveProperty(['code'])
    const status = await failure(
      service.admin.createOfficialFormula(formulaBody({ type: 'official' }), { status: 'beta' as never }),
    )
    expect(status.issues).toHaveProperty(['status'])
    expect((await store.dump()).formulas).toEqual([])
  })
})
